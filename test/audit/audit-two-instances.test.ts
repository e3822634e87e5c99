import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { capturedAuditLog as capturedLog } from '../helpers/audit-log.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';
import { createIdentity, managementApi } from '../identities/identity-fixtures.js';

/** What the fault tests cross-check: a revocation published by one instance is received by the other. */
describeWithPostgres('audit trail across two instances', () => {
  const logA = capturedLog();
  const logB = capturedLog();
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer({ logger: logA.logger });
    b = await startTestServer({ logger: logB.logger, databaseUrl: a.databaseUrl });
  }, 180_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('an identity deleted on A is revocation.published on A and revocation.received on B', async () => {
    const api = managementApi(a, await a.adminToken());
    const id = await createIdentity(api, { name: 'audit-two-instances', isAdmin: false });
    const deleted = await api.delete(`/identities/${id}`);
    expect(deleted.status).toBe(200);

    const published = logA.events().filter((e) => e.event === 'revocation.published' && e.identityId === id);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ cause: 'deleted', requestId: deleted.header('request-id') });
    const received = await waitFor(() =>
      logB.events().find((e) => e.event === 'revocation.received' && e.identityId === id),
    );
    expect(received).toMatchObject({ kind: 'identity' });
    expect(received.requestId).toBeUndefined();
    expect(logB.events().filter((e) => e.event === 'revocation.published')).toEqual([]);
  });
});
