// The configuration reference in docs/operations.md, config.example.yaml and .env.example are
// generated from the descriptions and defaults of src/config/config-schema.ts (`npm run docs`).
import { describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configSchema } from '../../src/config/config-schema.js';
import { variablesOf } from '../../src/config/load-config.js';
import { configKeys, leavesOf } from '../../scripts/config-keys.js';
import { renderConfigDocs } from '../../scripts/render-config-docs.js';

const root = resolve(process.cwd());

describe('generated configuration docs', () => {
  test('the committed files are what `npm run docs` writes', async () => {
    for (const file of await renderConfigDocs(root)) {
      const committed = readFileSync(join(root, file.path), 'utf8');
      // On failure: run `npm run docs` and commit the result.
      expect({ file: file.path, content: committed }).toEqual({ file: file.path, content: file.content });
    }
  });

  test('every setting is described, and every one but the listener list has a variable', () => {
    const leaves = leavesOf(configKeys(configSchema));
    expect(leaves.length).toBeGreaterThan(30);
    expect(leaves.filter((k) => !k.meta.description).map((k) => k.path)).toEqual([]);
    expect(leaves.filter((k) => variablesOf(k.path).length === 0).map((k) => k.path)).toEqual(['web']);
  });
});
