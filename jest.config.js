import process from 'node:process';

/**
 * Suites that PostgreSQL adds nothing to: unit tests, the CLI, browsers driving the pages, the
 * examples, the documentation's snippets, the OpenAPI document, the TLS and PROXY-protocol
 * listeners, the outbound webhook guards, and the embedded database's own backup. They run their
 * controllers on the embedded database or test what does not depend on one, so
 * `TEST_DATABASE_URL` leaves them out (CI runs them on the embedded leg); `TEST_EVERY_SUITE=1`
 * runs them on PostgreSQL too (README "Tests").
 */
const DATABASE_INDEPENDENT = [
  '<rootDir>/src/',
  '<rootDir>/test/browser/',
  '<rootDir>/test/cli/',
  '<rootDir>/test/(audit/list-cli|webhooks/admin-cli|webhooks/delivery-docs)\\.test\\.ts$',
  '<rootDir>/test/examples/',
  '<rootDir>/test/delivery/(cli-docs|compose|config-docs|integration-snippets|readme-blocks|start-script)\\.test\\.ts$',
  '<rootDir>/test/openapi/spec\\.test\\.ts$',
  '<rootDir>/test/proxy-protocol/',
  '<rootDir>/test/hostile/webhook-(ssrf-urls|redirects|loopback-dns|huge-responses|hanging-receivers)\\.test\\.ts$',
  '<rootDir>/test/foundation/(tls-ciphers|heap-options|absolute-form-target)\\.test\\.ts$',
  '<rootDir>/test/backups/embedded-copy\\.test\\.ts$',
];

const embeddedOnlyLeft = Boolean(process.env.TEST_DATABASE_URL) && !process.env.TEST_EVERY_SUITE;
if (embeddedOnlyLeft) {
  process.stderr.write(
    'on PostgreSQL: the database-independent suites (jest.config.js) run on the embedded database only; ' +
      'TEST_EVERY_SUITE=1 runs them here too\n',
  );
}

/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  // PGlite's WASM boot and RSA key generation exceed jest's 5 s default on 2 cores.
  testTimeout: 60000,
  roots: ['<rootDir>/test', '<rootDir>/src'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...(embeddedOnlyLeft ? DATABASE_INDEPENDENT : [])],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', diagnostics: false }] },
  maxWorkers: 2,
};
