import { afterAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { runSvc } from './run-svc.js';

const run = promisify(execFile);
const root = resolve(process.cwd());
const RELEASE = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

describe('svc --version and svc version', () => {
  // Run from a directory of their own: the release must not depend on where svc is started.
  const home = mkdtempSync(join(tmpdir(), 'svc-version-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  test('both print the release of package.json, without a controller or a session', async () => {
    for (const args of [['--version'], ['version']]) {
      expect({ args, ...(await runSvc(args, { home })) }).toEqual({
        args,
        code: 0,
        stdout: `${RELEASE}\n`,
        stderr: '',
      });
    }
  });

  test('--json prints it as a JSON object', async () => {
    const res = await runSvc(['--version', '--json'], { home });

    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ version: RELEASE });
  });

  test('the help lists the command and names --version', async () => {
    const res = await runSvc(['--help'], { home });

    expect(res.stdout).toMatch(/^ {2}svc version +print the release of svc \(also: svc --version\)$/m);
  });

  test('the built command (bin/svc.js, from dist/) prints the same release', async () => {
    await run('npm', ['run', '--silent', 'build'], { cwd: root });

    const built = await run(process.execPath, [join(root, 'bin', 'svc.js'), '--version'], { cwd: home });

    expect(built.stdout).toBe(`${RELEASE}\n`);
  }, 300_000);
});
