import { afterAll, describe, expect, test } from '@jest/globals';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { breakStaleLock } from '../../src/cli/session-store.js';

describe('the session lock of svc commands', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a stale lock is removed, and nothing is left behind', () => {
    const lock = join(dir, 'stale.lock');
    writeFileSync(lock, '');
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(lock, old, old);

    breakStaleLock(lock);

    expect(existsSync(lock)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('stale.lock'))).toEqual([]);
  });

  test('a lock another command took after the stale one was seen is kept (the same file), and nothing is left behind', () => {
    // Two commands saw the same stale lock; the first removed it and created its own: this one.
    const lock = join(dir, 'live.lock');
    writeFileSync(lock, '');
    const inode = statSync(lock).ino;

    breakStaleLock(lock);

    expect(existsSync(lock)).toBe(true);
    expect(statSync(lock).ino).toBe(inode);
    expect(readdirSync(dir).filter((f) => f.startsWith('live.lock'))).toEqual(['live.lock']);
  });

  test('a lock already gone is no error', () => {
    expect(() => breakStaleLock(join(dir, 'none.lock'))).not.toThrow();
  });
});
