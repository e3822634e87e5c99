import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { capturedAuditLog } from '../helpers/audit-log.js';
import { expectError } from '../helpers/expect-error.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { namedSite, passkeyApi, registerPasskey, softAuthenticatorFor } from './passkey-fixtures.js';

describe('passkeys as admins see them', () => {
  let server: TestServer;
  let admin: ManagementApi;
  let site: { client: HttpsClient; origin: string };
  const audit = capturedAuditLog();

  beforeAll(async () => {
    server = await startTestServer({ logger: audit.logger });
    admin = managementApi(server, await server.adminToken());
    site = namedSite(server);
  });
  afterAll(() => server.close());

  async function withPasskeys(name: string, count: number) {
    const user = await enrolledUpdbUser(server, admin, name);
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);
    const ids = [];
    for (let i = 0; i < count; i++) ids.push(await registerPasskey(api, authenticator, `key ${i}`));
    return { user, api, ids };
  }

  test('the identity detail counts them; /authenticators lists them with method passkey', async () => {
    const { user, ids } = await withPasskeys('pk-admin-list', 2);

    const detail = await identityDetail(admin, user.id);
    const listed = await admin.get(
      `/authenticators?filter=${encodeURIComponent(`identityId = "${user.id}"`)}&sort=createdAt`,
    );
    const passkeysOnly = await admin.get(
      `/authenticators?filter=${encodeURIComponent(`identityId = "${user.id}" and method = "passkey"`)}`,
    );
    const one = await admin.get(`/authenticators/${ids[0]}`);

    expect(detail.passkeyCount).toBe(2);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((a: { method: string }) => a.method)).toEqual(['updb', 'passkey', 'passkey']);
    expect(listed.body.meta.pagination.totalCount).toBe(3);
    expect(passkeysOnly.body.data).toEqual([
      expect.objectContaining({
        id: ids[0],
        identityId: user.id,
        method: 'passkey',
        name: 'key 0',
        lastUsedAt: null,
      }),
      expect.objectContaining({ id: ids[1], method: 'passkey', name: 'key 1' }),
    ]);
    expect(one.body.data).toMatchObject({ id: ids[0], method: 'passkey', name: 'key 0' });
  });

  test('an admin deletes a passkey through /authenticators; it is audited with the admin as actor', async () => {
    const { user, api, ids } = await withPasskeys('pk-admin-delete', 2);

    const deleted = await admin.delete(`/authenticators/${ids[0]}`);
    const again = await admin.delete(`/authenticators/${ids[0]}`);

    expect(deleted.status).toBe(200);
    expectError(again, { status: 404, code: 'NOT_FOUND' });
    expect((await api.list()).body.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
    expect((await identityDetail(admin, user.id)).passkeyCount).toBe(1);
    const removed = audit.events().find((e) => e.event === 'passkey.removed' && e.passkeyId === ids[0]);
    expect(removed).toMatchObject({ identityId: user.id, actorId: expect.any(String) });
    expect(removed!.actorId).not.toBe(user.id);
  });

  test('an owner removing a passkey is audited with the owner as actor', async () => {
    const { user, api, ids } = await withPasskeys('pk-owner-delete', 1);

    expect((await api.remove(ids[0]!)).status).toBe(200);

    expect(audit.events().find((e) => e.event === 'passkey.removed' && e.passkeyId === ids[0])).toMatchObject(
      {
        identityId: user.id,
        actorId: user.id,
      },
    );
  });

  test('an MFA reset removes the passkeys and ends the sessions (cause mfa-reset)', async () => {
    const { user, api } = await withPasskeys('pk-admin-reset', 2);

    const reset = await admin.delete(`/identities/${user.id}/mfa`);
    const afterwards = await api.list();

    expect(reset.status).toBe(200);
    expectError(afterwards, { status: 401, code: 'UNAUTHORIZED' });
    expect((await identityDetail(admin, user.id)).passkeyCount).toBe(0);
    expect(
      Number((await server.app.knex('passkeys').where({ identity_id: user.id }).count('* as n'))[0]!.n),
    ).toBe(0);
    expect(audit.events()).toContainEqual(
      expect.objectContaining({ event: 'session.ended', identityId: user.id, cause: 'mfa-reset' }),
    );
    expect(audit.events()).toContainEqual(
      expect.objectContaining({ event: 'identity.mfa-reset', identityId: user.id, passkeys: 2 }),
    );
  });

  test('deleting an identity deletes its passkeys', async () => {
    const { user } = await withPasskeys('pk-admin-cascade', 1);

    expect((await admin.delete(`/identities/${user.id}`)).status).toBe(200);

    const left = await server.app.knex('passkeys').where({ identity_id: user.id }).count('* as n');
    const handles = await server.app
      .knex('webauthn_user_handles')
      .where({ identity_id: user.id })
      .count('* as n');
    expect(Number(left[0]!.n)).toBe(0);
    expect(Number(handles[0]!.n)).toBe(0);
  });

  test('registrations are audited and counted', async () => {
    const count = async () => {
      const text = (await server.client.get('/metrics')).text;
      const line = text
        .split('\n')
        .find((l) => l.startsWith('svc_passkey_registrations_total{outcome="success"}'));
      return Number(line?.split(' ')[1] ?? 0);
    };
    const before = await count();

    const { user, ids } = await withPasskeys('pk-admin-audit', 1);

    expect(audit.events()).toContainEqual(
      expect.objectContaining({ event: 'passkey.registered', identityId: user.id, passkeyId: ids[0] }),
    );
    expect(await count()).toBe(before + 1);
  });
});
