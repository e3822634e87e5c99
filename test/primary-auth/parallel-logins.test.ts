import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// Every attempt counts a failure before the hash and gives it back after a success, in the
// identity's run and in its address's hour: parallel logins of one identity from one address
// update the same two rows, and must take their locks in one order (no deadlock, no 500).
test('parallel logins of one identity from one address all succeed', async () => {
  const statuses: number[] = [];
  for (let round = 0; round < 6; round++) {
    const answers = await Promise.all(
      Array.from({ length: 16 }, () =>
        server.client.post('/edge/client/v1/authenticate?method=password', {
          body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
        }),
      ),
    );
    statuses.push(...answers.map((r) => r.status));
  }
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
});
