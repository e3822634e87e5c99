import { afterAll, describe, expect, test } from '@jest/globals';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startTestServer } from '../helpers/test-server.js';

/** Every path under `dir` (itself included) whose mode grants anything to group or others. */
function sharedPaths(dir: string): string[] {
  const found: string[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path);
    if (!stat.isSymbolicLink() && (stat.mode & 0o077) !== 0)
      found.push(`${(stat.mode & 0o777).toString(8)} ${path}`);
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(dir);
  return found;
}

describe('the data directory is private to the service user', () => {
  const dirs: string[] = [];
  const newDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-perm-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test('after a start on the embedded database, nothing in it is readable by group or others', async () => {
    const dataDir = join(newDir(), 'data');
    const server = await startTestServer({ dataDir });
    try {
      // Writes reach the database files and the WAL before they are looked at.
      await server.adminToken();
      expect(readdirSync(dataDir).length).toBeGreaterThan(0);
      expect(sharedPaths(dataDir)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  test('a pre-existing 0755 directory with a 0644 file is tightened at start, and the log says so', async () => {
    const dataDir = newDir();
    chmodSync(dataDir, 0o755);
    mkdirSync(join(dataDir, 'old'));
    chmodSync(join(dataDir, 'old'), 0o755);
    writeFileSync(join(dataDir, 'old', 'file.txt'), 'x');
    chmodSync(join(dataDir, 'old', 'file.txt'), 0o644);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });

    const server = await startTestServer({ dataDir, logger });
    await server.close();

    expect(sharedPaths(dataDir)).toEqual([]);
    expect(lstatSync(join(dataDir, 'old', 'file.txt')).mode & 0o777).toBe(0o600);
    expect(lstatSync(join(dataDir, 'old')).mode & 0o777).toBe(0o700);
    const warnings = lines.map((l) => JSON.parse(l) as { msg: string; tightened?: number });
    expect(warnings).toContainEqual(
      expect.objectContaining({ msg: expect.stringContaining('tightened'), tightened: 3 }),
    );
  });
});
