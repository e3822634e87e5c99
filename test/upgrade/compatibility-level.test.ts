import { afterEach, describe, expect, test } from '@jest/globals';
import {
  COMPATIBILITY_TABLE,
  raiseCompatibilityLevel,
  readCompatibilityLevel,
  type RaiseCompatibilityLevel,
} from '../../src/db/compatibility-level.js';
import { newestMigration } from '../../src/db/migration-source.js';
import { startTestServer } from '../helpers/test-server.js';
import {
  migratedDatabase,
  PACKAGE_VERSION,
  recordNewerMigration,
  type MigratedDatabase,
} from '../helpers/upgrade-database.js';

/** Sorts after any migration this code will have for a long time. */
const NEWER = '999_newer_release_change';

const databases: MigratedDatabase[] = [];
afterEach(async () => {
  for (const db of databases.splice(0)) await db.drop();
});

async function database(): Promise<MigratedDatabase> {
  const db = await migratedDatabase();
  databases.push(db);
  return db;
}

const startOn = (db: MigratedDatabase) =>
  startTestServer({ dataDir: db.dataDir, databaseUrl: db.databaseUrl });

describe('the schema compatibility level', () => {
  test('migration 025 records the level 025_compatibility_level, why, and 0.2.0, the release it shipped in', async () => {
    const db = await database();
    const level = await db.use(readCompatibilityLevel);
    expect(level).toEqual({
      level: '025_compatibility_level',
      reason:
        'releases before it refuse to start on a database that has migrations they do not know, ' +
        'so they cannot share it with this one',
      raisedByVersion: '0.2.0',
      raisedAt: expect.any(Date),
    });
  });

  test('a database with a later migration this code does not know, level unchanged: it starts, serves and leaves that migration alone', async () => {
    const db = await database();
    await db.use((knex) => recordNewerMigration(knex, NEWER));

    const server = await startOn(db);
    try {
      expect((await server.client.get('/health/ready')).status).toBe(200);
      expect(await server.adminToken()).toEqual(expect.any(String));
      const names = (await server.app.knex('knex_migrations').orderBy('id').pluck('name')) as string[];
      expect(names.at(-1)).toBe(NEWER);
      expect(names).toContain(newestMigration);
      expect((await readCompatibilityLevel(server.app.knex))?.level).toBe('025_compatibility_level');
    } finally {
      await server.close();
    }
  });

  test('a level above this code refuses the start with one line naming both migrations and both releases', async () => {
    const db = await database();
    await db.use(async (knex) => {
      await recordNewerMigration(knex, NEWER);
      await raiseCompatibilityLevel(knex, {
        level: NEWER,
        reason: 'sessions are now sealed with a key older instances cannot read',
        raisedByVersion: '0.4.0',
      });
    });

    const refused = await startOn(db).then(
      async (server) => {
        await server.close();
        return undefined;
      },
      (err: Error) => err.message,
    );

    expect(refused).toBe(
      `this controller (${PACKAGE_VERSION}, newest migration ${newestMigration}) is older than this ` +
        `database allows (compatibility level ${NEWER}, raised by 0.4.0: sessions are now sealed with ` +
        `a key older instances cannot read); start a version that knows ${NEWER}`,
    );
    // Refused before migrating: the newer release's record is as it left it.
    expect(await db.use((knex) => knex('knex_migrations').orderBy('id').pluck('name'))).toContain(NEWER);
    expect((await db.use(readCompatibilityLevel))?.level).toBe(NEWER);
  });

  test('a level raised by a release of unknown version is refused without naming one', async () => {
    const db = await database();
    await db.use((knex) =>
      raiseCompatibilityLevel(knex, {
        level: NEWER,
        reason: 'the old writers skip the new check',
        raisedByVersion: null,
      }),
    );

    await expect(startOn(db)).rejects.toThrow(
      `(compatibility level ${NEWER}: the old writers skip the new check); start a version that knows ${NEWER}`,
    );
  });
});

describe('raising the compatibility level', () => {
  test('only ever raises: a lower or equal level leaves the row as it is', async () => {
    const db = await database();
    await db.use(async (knex) => {
      expect(
        await raiseCompatibilityLevel(knex, {
          level: NEWER,
          reason: 'a newer reason',
          raisedByVersion: '0.9.0',
        }),
      ).toBe(true);
      const raised = await readCompatibilityLevel(knex);

      const lower = { reason: 'lower', raisedByVersion: '0.9.1' };
      expect(await raiseCompatibilityLevel(knex, { ...lower, level: '500_middle' })).toBe(false);
      expect(await raiseCompatibilityLevel(knex, { ...lower, level: '025_compatibility_level' })).toBe(false);
      expect(await raiseCompatibilityLevel(knex, { ...lower, level: NEWER })).toBe(false);

      expect(await readCompatibilityLevel(knex)).toEqual(raised);
      expect(raised).toMatchObject({ level: NEWER, reason: 'a newer reason', raisedByVersion: '0.9.0' });
      expect(Number((await knex(COMPATIBILITY_TABLE).count('* as n').first())?.n)).toBe(1);
    });
  });

  test('a level that is not a migration name, or a raise without a reason or its release, is refused', async () => {
    const db = await database();
    await db.use(async (knex) => {
      await expect(
        raiseCompatibilityLevel(knex, { level: 'latest', reason: 'x', raisedByVersion: '0.3.0' }),
      ).rejects.toThrow('compatibility level "latest" is not a migration name (NNN_name)');
      await expect(
        raiseCompatibilityLevel(knex, { level: NEWER, reason: '  ', raisedByVersion: '0.3.0' }),
      ).rejects.toThrow(`raising the compatibility level to ${NEWER} needs a reason`);
      // The running code's version is no stand-in: between releases it still names the previous one.
      const withoutRelease = {
        level: NEWER,
        reason: 'old writers skip the check',
      } as RaiseCompatibilityLevel;
      await expect(raiseCompatibilityLevel(knex, withoutRelease)).rejects.toThrow(
        `raising the compatibility level to ${NEWER} needs the release it ships in (semver), not undefined`,
      );
      await expect(
        raiseCompatibilityLevel(knex, { level: NEWER, reason: 'x', raisedByVersion: 'next' }),
      ).rejects.toThrow(`needs the release it ships in (semver), not "next"`);
      expect((await readCompatibilityLevel(knex))?.level).toBe('025_compatibility_level');
    });
  });
});
