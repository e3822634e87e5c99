import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const oidcProvider = { name: 'oidc-provider', message: 'oidc-provider is touched only in src/oidc/.' };

/**
 * Imports point down (docs/architecture.md lists the order); these rules hold the directions that
 * matter most: services below HTTP and the provider, middleware below routes, repositories on db.
 * A later block replaces an earlier block's options for the same rule, so each folder's block
 * repeats what holds everywhere (oidc-provider only in src/oidc, compose.ts only from app.ts).
 */
const direction = (groups = [], paths = [oidcProvider]) => [
  'error',
  {
    paths,
    patterns: [
      {
        group: ['**/compose.js'],
        message: 'compose.ts is the composition root: only src/app.ts imports it.',
      },
      ...groups,
    ],
  },
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', 'bin/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': direction(),
    },
  },
  {
    files: ['src/services/**/*.ts'],
    rules: {
      'no-restricted-imports': direction([
        {
          group: ['**/routes/*', '**/middleware/*', '**/oidc/*', '**/listeners/*'],
          message:
            'services sit below the HTTP layer and the OIDC provider: pass what they need in from src/compose.ts.',
        },
      ]),
    },
  },
  {
    files: ['src/middleware/**/*.ts'],
    rules: {
      'no-restricted-imports': direction([
        { group: ['**/routes/*'], message: 'middleware runs for routes; it never imports them.' },
      ]),
    },
  },
  {
    files: ['src/repositories/**/*.ts'],
    rules: {
      'no-restricted-imports': direction([
        {
          // Its own folder, db, errors, and crypto (token ids are hashed before they reach SQL).
          regex: '^\\.\\./(?!(db|errors|crypto)/[^/]+$)',
          message: 'repositories only read and write rows: they import db, errors and crypto, nothing above.',
        },
      ]),
    },
  },
  {
    files: ['src/oidc/**/*.ts'],
    rules: {
      'no-restricted-imports': direction(
        [
          {
            group: ['**/routes/*', '**/middleware/*', '**/listeners/*'],
            message: 'the OIDC layer serves the routes; it never imports them or their middleware.',
          },
        ],
        [],
      ),
    },
  },
  {
    files: ['src/app.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // The examples are plain modern JavaScript that users copy: Node servers and a browser page.
    files: ['examples/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        ['console', 'URL', 'URLSearchParams', 'fetch', 'setTimeout', 'clearTimeout'].map((g) => [
          g,
          'readonly',
        ]),
      ),
    },
  },
  {
    // Plain JavaScript run by bare `node` (no TypeScript tooling): .ci/run's smoke on the oldest Node.
    files: ['scripts/**/*.mjs'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        ['console', 'process', 'URL', 'URLSearchParams', 'setTimeout'].map((g) => [g, 'readonly']),
      ),
    },
  },
  {
    // Stand-ins for other programs that tests start as processes (a headless device).
    files: ['test/**/*.mjs'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(['console', 'process', 'URL', 'fetch'].map((g) => [g, 'readonly'])),
    },
  },
  {
    files: ['examples/*/server.js', 'examples/cli-client/**/*.js'],
    languageOptions: { globals: { process: 'readonly', AbortSignal: 'readonly' } },
  },
  {
    files: ['examples/spa/app.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['document', 'location', 'history', 'sessionStorage'].map((g) => [g, 'readonly']),
      ),
    },
  },
  {
    // Tests read JSON bodies of many shapes; typing each one adds noise, not safety.
    files: ['test/**/*.ts', 'src/**/*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
