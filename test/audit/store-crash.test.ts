import { afterAll, beforeAll, expect } from '@jest/globals';
import { capturedAuditLog } from '../helpers/audit-log.js';
import { describeWithPostgres, testWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { createIdentity, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { storedEvents, storedOfRequest } from './store-fixtures.js';

/**
 * A controller whose connection dies in the middle of a change (the process killed, the network
 * gone) leaves neither the change nor its event: PostgreSQL rolls back the transaction that had
 * inserted both. The test stalls a real change after its event's insert by holding a row lock the
 * change needs, and terminates the backend serving it.
 */
describeWithPostgres('a transaction killed after its event was inserted', () => {
  const { logger, events } = capturedAuditLog();
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer({ logger });
    api = managementApi(server, await server.adminToken());
  }, 180_000);
  afterAll(() => server?.close());

  testWithPostgres('leaves neither the policy change nor policy.updated', async () => {
    const knex = server.app.knex;
    const policy = await api.post('/auth-policies', { body: { name: 'crash-policy' } });
    expect(policy.status).toBe(201);
    const policyId = policy.body.data.id as string;
    const userId = await createIdentity(api, { name: 'crash-user', isAdmin: false, authPolicyId: policyId });

    // A change of the policy's factors stores `policy.updated`, then revokes the identities using
    // it: that update waits for the identity's row, which the test holds.
    const lock = await knex.transaction();
    try {
      await lock.raw('SELECT id FROM identities WHERE id = ? FOR UPDATE', [userId]);
      const patch = api.patch(`/auth-policies/${policyId}`, { body: { secondary: { requireTotp: true } } });
      const pid = await waitFor(
        async () => {
          const { rows } = await knex.raw(
            `SELECT pid FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%update "identities"%'`,
          );
          return rows[0]?.pid as number | undefined;
        },
        { what: 'the policy change waiting for the identity row' },
      );
      // That transaction has inserted its event already (it holds the insert's lock on the table).
      const { rows: held } = await knex.raw(
        `SELECT l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE l.pid = ? AND c.relname = 'audit_events'`,
        [pid],
      );
      expect(held.map((r: { mode: string }) => r.mode)).toContain('RowExclusiveLock');

      await knex.raw('SELECT pg_terminate_backend(?)', [pid]);
      const res = await patch;
      expect(res.status).not.toBe(200);
      expect(await storedOfRequest(knex, res.header('request-id')!)).toEqual([]);
      expect(events().filter((e) => e.requestId === res.header('request-id'))).toEqual([]);
    } finally {
      await lock.rollback();
    }

    expect(
      (await storedEvents(knex, 'policy.updated')).filter((r) => r.details.policyId === policyId),
    ).toEqual([]);
    const after = await api.get(`/auth-policies/${policyId}`);
    expect(after.body.data.secondary.requireTotp).toBe(false);
    // The server goes on: the same change succeeds, with its event.
    const again = await api.patch(`/auth-policies/${policyId}`, {
      body: { secondary: { requireTotp: true } },
    });
    expect(again.status).toBe(200);
    const stored = (await storedEvents(knex, 'policy.updated')).filter(
      (r) => r.details.policyId === policyId,
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]!.details).toEqual({ policyId, factorsChanged: true });
  });
});
