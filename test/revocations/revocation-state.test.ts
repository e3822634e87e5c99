import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import { createDatabase, type Database } from '../../src/db/create-database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createRevocationState, type RevocationState } from '../../src/services/revocation-state.js';
import { revocationsRepository } from '../../src/repositories/revocations-repository.js';
import { deleteExpiredRows } from '../../src/services/janitor.js';
import { migratedPglite } from '../helpers/pglite-template.js';
import { createTestDatabaseUrl, testWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';

const logger = pino({ level: 'silent' });
const inAnHour = () => new Date(Date.now() + 3600_000);

/** Generous: what is asserted is that the revocation arrives, not how fast a loaded machine polls. */
const arrives = (check: () => boolean, what: string) =>
  waitFor(check, { timeout: 10_000, interval: 25, what });

describe('revocation state kept in memory', () => {
  let url: { url: string; drop: () => Promise<void> } | undefined;
  let embedded: { db: Database; drop: () => Promise<void> } | undefined;
  let writer: Database;
  let reader: Database;
  let state: RevocationState;

  beforeAll(async () => {
    url = await createTestDatabaseUrl();
    if (!url) embedded = await migratedPglite();
    writer = url ? createDatabase({ kind: 'pg', connectionString: url.url, poolMax: 2 }) : embedded!.db;
    reader = url ? createDatabase({ kind: 'pg', connectionString: url.url, poolMax: 2 }) : writer;
    await migrateToLatest(writer);
    state = createRevocationState({ database: reader, logger, pollMs: 1000 });
    await state.start();
  });
  afterAll(async () => {
    await state.stop();
    if (embedded) await embedded.drop();
    else await writer.knex.destroy();
    if (reader !== writer) await reader.knex.destroy();
    await url?.drop();
  });

  test('an ended API session becomes known (by the next poll), and only that one', async () => {
    await revocationsRepository.insert(writer.knex, {
      kind: 'api_session',
      subject: 'asid-1',
      generation: null,
      expiresAt: inAnHour(),
    });
    await arrives(() => state.isSessionRevoked('asid-1'), "state.isSessionRevoked('asid-1')");
    expect(state.isSessionRevoked('asid-2')).toBe(false);
  });

  test('an identity revocation refuses older generations and keeps newer ones', async () => {
    await revocationsRepository.insert(writer.knex, {
      kind: 'identity',
      subject: 'id-1',
      generation: 3,
      expiresAt: inAnHour(),
    });
    await arrives(() => state.isIdentityTokenRevoked('id-1', 2), "state.isIdentityTokenRevoked('id-1', 2)");
    expect(state.isIdentityTokenRevoked('id-1', 3)).toBe(false);
    expect(state.isIdentityTokenRevoked('id-1', 4)).toBe(false);
  });

  test('a deleted identity refuses every generation', async () => {
    await revocationsRepository.insert(writer.knex, {
      kind: 'identity',
      subject: 'id-2',
      generation: null,
      expiresAt: inAnHour(),
    });
    await arrives(
      () => state.isIdentityTokenRevoked('id-2', 1_000_000),
      "state.isIdentityTokenRevoked('id-2', 1_000_000)",
    );
  });

  test('expired revocations are forgotten', async () => {
    await revocationsRepository.insert(writer.knex, {
      kind: 'api_session',
      subject: 'asid-old',
      generation: null,
      expiresAt: new Date(Date.now() - 1000),
    });
    await state.refresh();
    expect(state.isSessionRevoked('asid-old')).toBe(false);
  });

  testWithPostgres('a notification arrives faster than the poll', async () => {
    const slow = createRevocationState({ database: reader, logger, pollMs: 60_000 });
    await slow.start();
    try {
      await revocationsRepository.insert(writer.knex, {
        kind: 'api_session',
        subject: 'asid-notify',
        generation: null,
        expiresAt: inAnHour(),
      });
      await arrives(() => slow.isSessionRevoked('asid-notify'), "slow.isSessionRevoked('asid-notify')");
    } finally {
      await slow.stop();
    }
  });

  testWithPostgres('a revocation committed after a later one is still picked up', async () => {
    const trx = await writer.knex.transaction();
    await revocationsRepository.insert(trx, {
      kind: 'api_session',
      subject: 'asid-slow',
      generation: null,
      expiresAt: inAnHour(),
    });
    await revocationsRepository.insert(writer.knex, {
      kind: 'api_session',
      subject: 'asid-fast',
      generation: null,
      expiresAt: inAnHour(),
    });
    await arrives(() => state.isSessionRevoked('asid-fast'), "state.isSessionRevoked('asid-fast')");
    await trx.commit();
    await arrives(() => state.isSessionRevoked('asid-slow'), "state.isSessionRevoked('asid-slow')");
  });

  testWithPostgres('killing the listener connection loses no revocation', async () => {
    const pid = state.listenerPid();
    expect(pid).toBeDefined();
    await writer.knex.raw('SELECT pg_terminate_backend(?)', [pid!]);
    await revocationsRepository.insert(writer.knex, {
      kind: 'api_session',
      subject: 'asid-cut',
      generation: null,
      expiresAt: inAnHour(),
    });
    await arrives(() => state.isSessionRevoked('asid-cut'), "state.isSessionRevoked('asid-cut')");
    await arrives(
      () => state.listenerPid() !== undefined && state.listenerPid() !== pid,
      'a new listener connection',
    );
    await revocationsRepository.insert(writer.knex, {
      kind: 'api_session',
      subject: 'asid-after',
      generation: null,
      expiresAt: inAnHour(),
    });
    await arrives(() => state.isSessionRevoked('asid-after'), "state.isSessionRevoked('asid-after')");
  });
});

describe('the janitor', () => {
  test('deletes expired sessions and revocations and keeps live ones', async () => {
    const { db, drop } = await migratedPglite();
    try {
      const past = new Date(Date.now() - 1000);
      await revocationsRepository.insert(db.knex, {
        kind: 'api_session',
        subject: 'old',
        generation: null,
        expiresAt: past,
      });
      await revocationsRepository.insert(db.knex, {
        kind: 'api_session',
        subject: 'new',
        generation: null,
        expiresAt: inAnHour(),
      });
      expect(await deleteExpiredRows(db.knex, new Date())).toMatchObject({ sessions: 0, revocations: 1 });
      expect((await revocationsRepository.listLive(db.knex, new Date())).map((r) => r.subject)).toEqual([
        'new',
      ]);
    } finally {
      await drop();
    }
  });
});
