import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { renderConfigDocs } from './render-config-docs.js';

/** `npm run docs`: rewrites the configuration reference and both example files from the schema. */
const root = resolve(import.meta.dirname, '..');
for (const file of await renderConfigDocs(root)) {
  await writeFile(join(root, file.path), file.content);
  process.stdout.write(`wrote ${file.path}\n`);
}
