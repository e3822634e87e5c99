import { afterEach, describe, expect, jest, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { raiseCompatibilityLevel } from '../../src/db/compatibility-level.js';
import { newestMigration } from '../../src/db/migration-source.js';
import { spawnController, type SpawnedController } from '../helpers/spawn-controller.js';
import {
  migratedDatabase,
  PACKAGE_VERSION,
  recordNewerMigration,
  type MigratedDatabase,
} from '../helpers/upgrade-database.js';

// A controller process and a script through tsx, each opening the database.
jest.setTimeout(180_000);

const NEWER = '999_newer_release_change';
const REFUSAL =
  `this controller (${PACKAGE_VERSION}, newest migration ${newestMigration}) is older than this ` +
  `database allows (compatibility level ${NEWER}, raised by 0.4.0: old writers leave the new ` +
  `column empty); start a version that knows ${NEWER}`;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A database a newer release has migrated and raised the level of. */
async function databaseOfNewerRelease(): Promise<MigratedDatabase> {
  const db = await migratedDatabase();
  cleanups.push(() => db.drop());
  await db.use(async (knex) => {
    await recordNewerMigration(knex, NEWER);
    await raiseCompatibilityLevel(knex, {
      level: NEWER,
      reason: 'old writers leave the new column empty',
      raisedByVersion: '0.4.0',
    });
  });
  return db;
}

describe('an older controller on a database a newer release has raised the level of', () => {
  test('the process exits 1 after one line that names both migrations and both releases', async () => {
    const db = await databaseOfNewerRelease();

    const controller: SpawnedController = await spawnController(db.env);
    cleanups.push(async () => {
      if (controller.child.exitCode === null) controller.child.kill('SIGKILL');
      await controller.exited;
    });

    expect(await controller.exited).toBe(1);
    // Besides the structured log (JSON lines), the refusal is all there is: one line, no stack.
    const plain = controller
      .output()
      .split('\n')
      .filter((line) => line && !line.startsWith('{'));
    expect(plain).toEqual([`svc controller failed to start: ${REFUSAL}`]);
  });

  test('npm run db:migrate refuses the same way and migrates nothing', async () => {
    const db = await databaseOfNewerRelease();
    const before = await db.use((knex) => knex('knex_migrations').orderBy('id').pluck('name'));

    const result = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join('scripts', 'db-migrate.ts')],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...db.env } },
    ).then(
      ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({
        code: err.code,
        out: err.stdout + err.stderr,
      }),
    );

    expect(result).toEqual({ code: 1, out: `db:migrate: ${REFUSAL}\n` });
    expect(await db.use((knex) => knex('knex_migrations').orderBy('id').pluck('name'))).toEqual(before);
  });
});
