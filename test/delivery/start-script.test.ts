// `npm start` builds first (prestart), so a fresh clone runs with `npm install && npm start`; the
// build is incremental, so an up-to-date build costs a timestamp check instead of a full compile.
import { describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = resolve(process.cwd());
const mainJs = join(root, 'dist', 'src', 'main.js');

const build = () => run('npm', ['run', '--silent', 'build'], { cwd: root });

describe('npm start', () => {
  test('prestart builds, and a second build with nothing changed writes nothing', async () => {
    const scripts = (
      JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts.prestart).toBe('npm run build');
    // With the heap options of src/node-heap-options.ts (test/foundation/heap-options.test.ts).
    expect(scripts.start).toMatch(/^node (--\S+ )*dist\/src\/main\.js$/);

    await build(); // whatever state dist/ is in, it is up to date afterwards
    const before = statSync(mainJs).mtimeMs;
    await build();
    expect(statSync(mainJs).mtimeMs).toBe(before);
  });
});
