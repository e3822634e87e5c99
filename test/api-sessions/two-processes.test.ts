import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import { oidcLogin, refreshTokens } from '../helpers/oidc-client.js';
import {
  startControllerPair,
  type ControllerPair,
  type SpawnedController,
} from '../helpers/spawn-controller.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';

// Controller processes start with tsx, migrations and the PKI: minutes on a loaded machine.
jest.setTimeout(240_000);

const ADMIN = { username: 'admin', password: 'admin-password-1' };
const MGMT = '/edge/management/v1';
const CLIENT = '/edge/client/v1';

// Several processes need a shared PostgreSQL; the embedded database serves one process only.
describeWithPostgres('a session ended on one instance is refused on the other', () => {
  let pair: ControllerPair;
  let a: SpawnedController;
  let b: SpawnedController;
  let onA: HttpsClient;
  let onB: HttpsClient;
  let admin: Record<string, string>;

  beforeAll(async () => {
    pair = await startControllerPair();
    ({ a, b } = pair);
    onA = createHttpsClient(a.url, { ca: a.ca() });
    onB = createHttpsClient(b.url, { ca: b.ca() });
    const login = await onA.post(`${MGMT}/authenticate?method=password`, { body: ADMIN });
    admin = { 'svc-session': login.body.data.token };
  });

  afterAll(async () => {
    await Promise.all([onA?.close(), onB?.close()]);
    await pair?.close();
  });

  async function userWithPassword(name: string): Promise<{ id: string; password: string }> {
    const created = await onA.post(`${MGMT}/identities`, {
      headers: admin,
      body: { name, isAdmin: false, enrollment: { updb: name } },
    });
    const id = created.body.data.id as string;
    const detail = await onA.get(`${MGMT}/identities/${id}`, { headers: admin });
    const password = `Pw-${name}-12345`;
    const enrolled = await onA.post(`${CLIENT}/enroll/updb?token=${detail.body.data.enrollment.updb.token}`, {
      body: { password },
    });
    expect(enrolled.status).toBe(200);
    return { id, password };
  }

  /**
   * How long after `end` answered the other instance first refuses with `refused`. The bound is the
   * catch-up read's second; the wait itself is generous, so that a loaded machine reports a time
   * rather than a timeout.
   */
  async function refusedAfter(end: () => Promise<number>, refused: () => Promise<boolean>): Promise<number> {
    expect(await end()).toBe(200);
    const ended = Date.now();
    await waitFor(refused, { timeout: 15_000, interval: 20, what: 'the ending on the other instance' });
    return Date.now() - ended;
  }

  test('an admin on A ends an OIDC and a legacy session that B serves', async () => {
    const user = await userWithPassword('stolen-laptop');
    const { tokens } = await oidcLogin(onB, { body: { username: 'stolen-laptop', password: user.password } });
    const legacyLogin = await onB.post(`${CLIENT}/authenticate?method=password`, {
      body: { username: 'stolen-laptop', password: user.password },
    });
    const legacy = { 'svc-session': legacyLogin.body.data.token as string };
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    const me = (headers: Record<string, string>) => onB.get(`${CLIENT}/current-identity`, { headers });
    // B knows both: the legacy session is in its memory from here on.
    for (let i = 0; i < 3; i++) {
      expect((await me(bearer)).status).toBe(200);
      expect((await me(legacy)).status).toBe(200);
    }
    const asid = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString()).z_asid;

    const oidcMs = await refusedAfter(
      async () => (await onA.delete(`${MGMT}/api-sessions/${asid}`, { headers: admin })).status,
      async () => (await me(bearer)).status === 401,
    );
    const legacyMs = await refusedAfter(
      async () =>
        (await onA.delete(`${MGMT}/api-sessions/${legacyLogin.body.data.id}`, { headers: admin })).status,
      async () => (await me(legacy)).status === 401,
    );

    expect(oidcMs).toBeLessThan(1000);
    expect(legacyMs).toBeLessThan(1000);
    // Behind one address, as replicas are: B's refresh token, redeemed at B's issuer, on either instance.
    for (const client of [onA, onB]) {
      const refresh = await refreshTokens(client, tokens.refresh_token!, { host: new URL(b.url).host });
      expect(refresh.body.error).toBe('invalid_grant');
    }
  });

  test("deleting a device's certificate authenticator on A ends its bound session on B, over the old certificate too", async () => {
    const created = await onA.post(`${MGMT}/identities`, {
      headers: admin,
      body: { name: 'stolen-device', type: 'Device', isAdmin: false, enrollment: { ott: true } },
    });
    const id = created.body.data.id as string;
    const detail = await onA.get(`${MGMT}/identities/${id}`, { headers: admin });
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'stolen-device' });
    const enrolled = await onA.post(`${CLIENT}/enroll/ott`, {
      body: { token: detail.body.data.enrollment.ott.token, clientCsr: csrPem },
    });
    expect(enrolled.status).toBe(200);
    const device = createHttpsClient(b.url, { ca: b.ca(), cert: enrolled.body.data.cert, key: keyPem });
    try {
      const { tokens } = await oidcLogin(device, { method: 'cert', body: {} });
      const me = () =>
        device.get(`${CLIENT}/current-identity`, {
          headers: { authorization: `Bearer ${tokens.access_token}` },
        });
      const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString());
      expect(typeof claims.cnf['x5t#S256']).toBe('string');
      expect((await me()).status).toBe(200);
      const list = await onA.get(
        `${MGMT}/authenticators?filter=${encodeURIComponent(`identityId = "${id}"`)}`,
        { headers: admin },
      );
      const authenticatorId = list.body.data[0].id as string;

      const ms = await refusedAfter(
        async () =>
          (await onA.delete(`${MGMT}/authenticators/${authenticatorId}`, { headers: admin })).status,
        async () => (await me()).status === 401,
      );

      expect(ms).toBeLessThan(1000);
      const refresh = await refreshTokens(device, tokens.refresh_token!);
      expect([refresh.status, refresh.body.error]).toEqual([400, 'invalid_grant']);
    } finally {
      await device.close();
    }
  });

  test("every session of an identity ended on B is refused on A; the identity's own delete too", async () => {
    const user = await userWithPassword('stolen-phone');
    const first = await oidcLogin(onA, { body: { username: 'stolen-phone', password: user.password } });
    const second = await oidcLogin(onA, { body: { username: 'stolen-phone', password: user.password } });
    const me = (token: string) =>
      onA.get(`${CLIENT}/current-identity`, { headers: { authorization: `Bearer ${token}` } });
    expect((await me(first.tokens.access_token)).status).toBe(200);

    const allMs = await refusedAfter(
      async () => (await onB.delete(`${MGMT}/identities/${user.id}/api-sessions`, { headers: admin })).status,
      async () =>
        (await me(first.tokens.access_token)).status === 401 &&
        (await me(second.tokens.access_token)).status === 401,
    );
    expect(allMs).toBeLessThan(1000);

    // The identity ends one of its sessions on B with another; A refuses it.
    const laptop = await oidcLogin(onA, { body: { username: 'stolen-phone', password: user.password } });
    const phone = await oidcLogin(onA, { body: { username: 'stolen-phone', password: user.password } });
    const phoneAsid = JSON.parse(
      Buffer.from(phone.tokens.access_token.split('.')[1]!, 'base64url').toString(),
    ).z_asid;
    expect((await me(phone.tokens.access_token)).status).toBe(200);
    const selfMs = await refusedAfter(
      async () =>
        (
          await onB.delete(`${CLIENT}/current-identity/api-sessions/${phoneAsid}`, {
            headers: { authorization: `Bearer ${laptop.tokens.access_token}` },
          })
        ).status,
      async () => (await me(phone.tokens.access_token)).status === 401,
    );
    expect(selfMs).toBeLessThan(1000);
    expect((await me(laptop.tokens.access_token)).status).toBe(200);
  });
});
