import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { describeWithOwnCluster, startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { acceptsConnections } from '../helpers/accepts-connections.js';
import { waitFor } from '../helpers/wait-for.js';

// A cluster of its own (initdb) and a controller migrating it: minutes on a loaded machine.
jest.setTimeout(180_000);

/**
 * The backend of the change feed's LISTEN connection is stopped (SIGSTOP), as a database host that
 * stops answering leaves it: ending that connection then waits for an answer that does not come.
 * The cluster is the test's own, so the pid is a process of this machine.
 */
describeWithOwnCluster('SIGTERM while the database does not answer', () => {
  let cluster: PgCluster;
  let server: TestServer;
  let frozen: number | undefined;

  beforeAll(async () => {
    cluster = await startPgCluster();
    server = await startTestServer({ databaseUrl: cluster.url });
  });
  afterAll(async () => {
    if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
    await server?.close();
    await cluster?.destroy();
  }, 60_000);

  test('the listeners stop accepting without waiting for the services, which stop after them', async () => {
    const db = await cluster.connect();
    try {
      const { rows } = await db.query(
        `SELECT pid FROM pg_stat_activity WHERE application_name = 'svc-controller-listen'`,
      );
      expect(rows).toHaveLength(1);
      frozen = rows[0].pid as number;
    } finally {
      await db.end();
    }
    const port = Number(new URL(server.url).port);
    expect(await acceptsConnections(port)).toBe(true);

    process.kill(frozen, 'SIGSTOP');
    let stopped = false;
    const shutdown = server.app.shutdown().then(() => (stopped = true));
    await waitFor(async () => !(await acceptsConnections(port)), {
      what: 'new connections to be refused while the LISTEN connection cannot be ended',
    });
    // The premise holds: the services still wait for their database.
    expect(stopped).toBe(false);

    process.kill(frozen, 'SIGCONT');
    frozen = undefined;
    await shutdown;
  });
});
