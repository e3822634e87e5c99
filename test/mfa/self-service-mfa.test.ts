import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sha256Hex } from '../../src/crypto/random.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { secretFromUrl, timeStepAt, totpCode } from '../helpers/totp.js';
import { createUser, sessionOf } from './mfa-fixtures.js';

const MFA = '/edge/client/v1/current-identity/mfa';

/** Width and height from a PNG's IHDR chunk (PNG spec §11.2.2), after checking the signature. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe('self-service TOTP under /current-identity/mfa', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const start = (headers: Record<string, string>) => server.client.post(MFA, { headers });

  /** A user with a verified TOTP configuration; the code of `step` has been used to verify it. */
  async function enrolledUser(name: string) {
    const user = await createUser(server, name);
    const headers = await sessionOf(server, user);
    const started = (await start(headers)).body.data;
    const step = timeStepAt();
    const verify = await server.client.post(`${MFA}/verify`, {
      headers,
      body: { code: await totpCode(started.provisioningUrl, step) },
    });
    expect(verify.status).toBe(200);
    return {
      user,
      headers,
      url: started.provisioningUrl as string,
      codes: started.recoveryCodes as string[],
      step,
    };
  }

  test('starting an enrollment answers 201 with the exact provisioning URL and ten recovery codes', async () => {
    const user = await createUser(server, 'enroll alice@example.com');
    const headers = await sessionOf(server, user);

    const res = await start(headers);

    expect(res.status).toBe(201);
    expect(Object.keys(res.body)).toEqual(['data', 'meta']);
    expect(Object.keys(res.body.data).sort()).toEqual(['isVerified', 'provisioningUrl', 'recoveryCodes']);
    expect(res.body.data.isVerified).toBe(false);
    expect(res.body.data.provisioningUrl).toMatch(
      /^otpauth:\/\/totp\/svc:enroll%20alice%40example\.com\?issuer=svc&secret=[A-Z2-7]{32}$/,
    );
    const codes: string[] = res.body.data.recoveryCodes;
    expect(codes).toHaveLength(10);
    for (const code of codes) expect(code).toMatch(/^[A-Z2-7]{12}$/);
    expect(new Set(codes).size).toBe(10);
  });

  test('the secret is stored sealed and the recovery codes only as hashes', async () => {
    const user = await createUser(server, 'enroll sealed');
    const started = (await start(await sessionOf(server, user))).body.data;

    const row = await server.app.knex('mfa_totp').where({ identity_id: user.id }).first();
    const hashes = await server.app
      .knex('mfa_recovery_codes')
      .where({ identity_id: user.id })
      .pluck('code_hash');

    const secret = secretFromUrl(started.provisioningUrl);
    expect(row.secret_enc).not.toContain(secret);
    expect(row.secret_enc).toMatch(/^v1\./);
    expect(hashes).toHaveLength(10);
    for (const code of started.recoveryCodes as string[]) {
      expect(hashes).not.toContain(code);
      // Keyed, not a bare digest that a stolen table could be checked against.
      expect(hashes).not.toContain(sha256Hex(code));
      expect(hashes).not.toContain(sha256Hex(`${user.id}:${code}`));
    }
    for (const hash of hashes) expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });

  test('a second start is 409 MFA_EXISTS; DELETE abandons it and a fresh start has a new secret', async () => {
    const user = await createUser(server, 'enroll restart');
    const headers = await sessionOf(server, user);
    const first = (await start(headers)).body.data;

    const again = await start(headers);
    const abandon = await server.client.delete(MFA, { headers });
    const gone = await server.client.get(MFA, { headers });
    const restart = await start(headers);

    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('MFA_EXISTS');
    expect(abandon.status).toBe(200);
    expect(abandon.body).toEqual({ data: {}, meta: {} });
    expect(gone.status).toBe(404);
    expect(restart.status).toBe(201);
    expect(secretFromUrl(restart.body.data.provisioningUrl)).not.toBe(secretFromUrl(first.provisioningUrl));
    expect(restart.body.data.recoveryCodes).not.toEqual(first.recoveryCodes);
  });

  test('GET shows the provisioning URL only while unverified; a correct code verifies it', async () => {
    const user = await createUser(server, 'enroll verify');
    const headers = await sessionOf(server, user);
    const none = await server.client.get(MFA, { headers });
    const started = (await start(headers)).body.data;
    const pending = await server.client.get(MFA, { headers });

    const verify = await server.client.post(`${MFA}/verify`, {
      headers,
      body: { code: await totpCode(started.provisioningUrl) },
    });
    const verified = await server.client.get(MFA, { headers });
    const me = await server.client.get('/edge/client/v1/current-identity', { headers });

    expect(none.status).toBe(404);
    expect(pending.status).toBe(200);
    expect(pending.body.data).toMatchObject({ isVerified: false, provisioningUrl: started.provisioningUrl });
    expect(Number.isNaN(Date.parse(pending.body.data.createdAt))).toBe(false);
    expect(verify.status).toBe(200);
    expect(verify.body).toEqual({ data: {}, meta: {} });
    expect(verified.body.data.isVerified).toBe(true);
    expect(verified.body.data).not.toHaveProperty('provisioningUrl');
    expect(me.body.data.isMfaEnabled).toBe(true);
  });

  test('verify refuses a wrong code, a recovery code and a missing code; after success it is 404', async () => {
    const user = await createUser(server, 'enroll wrong codes');
    const headers = await sessionOf(server, user);
    const started = (await start(headers)).body.data;
    const post = (body: unknown) => server.client.post(`${MFA}/verify`, { headers, body });
    const step = timeStepAt();
    const wrong = (await totpCode(started.provisioningUrl, step + 10)) as string;

    const results = [
      await post({ code: wrong }),
      await post({ code: started.recoveryCodes[0] }),
      await post({ code: '' }),
      await post({ code: 'x'.repeat(110) }),
    ];
    const missing = await post({});
    const ok = await post({ code: await totpCode(started.provisioningUrl, step) });
    const again = await post({ code: await totpCode(started.provisioningUrl, step + 1) });

    for (const r of results) {
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('MFA_INVALID_TOKEN');
    }
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'code' } });
    expect(ok.status).toBe(200);
    expect(again.status).toBe(404);
    expect((await start(headers)).body.error.code).toBe('MFA_EXISTS');
  });

  test('the QR code is a real PNG while unverified and 404 before and after', async () => {
    const user = await createUser(server, 'enroll qr');
    const headers = await sessionOf(server, user);
    const before = await server.client.get(`${MFA}/qr-code`, { headers });
    const started = (await start(headers)).body.data;

    const res = await server.client.dispatcher.request({
      origin: server.url,
      path: `${MFA}/qr-code`,
      method: 'GET',
      headers,
    });
    const png = Buffer.from(await res.body.arrayBuffer());
    await server.client.post(`${MFA}/verify`, {
      headers,
      body: { code: await totpCode(started.provisioningUrl) },
    });
    const after = await server.client.get(`${MFA}/qr-code`, { headers });

    expect(before.status).toBe(404);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['cache-control']).toBe('no-store');
    const { width, height } = pngSize(png);
    expect(width).toBe(height);
    expect(width).toBeGreaterThanOrEqual(100);
    expect(after.status).toBe(404);
  });

  test('recovery codes: the count is shown, regeneration needs a valid code and shows ten new ones', async () => {
    const { user, headers, url, codes, step } = await enrolledUser('recovery regenerate');

    const count = await server.client.get(`${MFA}/recovery-codes`, { headers });
    const wrong = await server.client.post(`${MFA}/recovery-codes`, {
      headers,
      body: { code: await totpCode(url, step + 10) },
    });
    const regenerated = await server.client.post(`${MFA}/recovery-codes`, {
      headers,
      body: { code: await totpCode(url, step + 1) },
    });
    const after = await server.client.get(`${MFA}/recovery-codes`, { headers });
    const oldCode = await server.app.services.totp.verifyLoginCode(user.id, codes[0]!).catch((e) => e.code);

    expect(count.status).toBe(200);
    expect(count.body).toEqual({ data: { remaining: 10 }, meta: {} });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(regenerated.status).toBe(200);
    const fresh: string[] = regenerated.body.data.recoveryCodes;
    expect(fresh).toHaveLength(10);
    for (const c of fresh) expect(codes).not.toContain(c);
    expect(after.body.data.remaining).toBe(10);
    expect(oldCode).toBe('MFA_INVALID_TOKEN');
  });

  test('deleting a verified configuration needs a valid code, from the header or the body', async () => {
    const byHeader = await enrolledUser('delete by header');
    const byBody = await enrolledUser('delete by body');

    const noCode = await server.client.delete(MFA, { headers: byHeader.headers });
    const wrongCode = await server.client.delete(MFA, {
      headers: {
        ...byHeader.headers,
        'mfa-validation-code': await totpCode(byHeader.url, byHeader.step + 10),
      },
    });
    const stillThere = await server.client.get(MFA, { headers: byHeader.headers });
    const headerDelete = await server.client.delete(MFA, {
      headers: {
        ...byHeader.headers,
        'mfa-validation-code': await totpCode(byHeader.url, byHeader.step + 1),
      },
    });
    const bodyDelete = await server.client.delete(MFA, {
      headers: byBody.headers,
      body: { code: byBody.codes[3] },
    });

    expect(noCode.status).toBe(400);
    expect(noCode.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(wrongCode.status).toBe(400);
    expect(stillThere.body.data.isVerified).toBe(true);
    expect(headerDelete.status).toBe(200);
    expect(bodyDelete.status).toBe(200);
    for (const h of [byHeader.headers, byBody.headers]) {
      expect((await server.client.get(MFA, { headers: h })).status).toBe(404);
      const me = await server.client.get('/edge/client/v1/current-identity', { headers: h });
      expect(me.body.data.isMfaEnabled).toBe(false);
    }
    expect(await server.app.knex('mfa_recovery_codes').where({ identity_id: byBody.user.id })).toEqual([]);
  });

  test('the MFA endpoints need a session and take only JSON or form bodies', async () => {
    const user = await createUser(server, 'enroll anonymous');
    const headers = await sessionOf(server, user);

    const anonymous = await server.client.post(MFA);
    const textBody = await server.client.post(`${MFA}/verify`, {
      headers: { ...headers, 'content-type': 'text/plain' },
      body: '123456',
    });
    await start(headers);
    const form = await server.client.post(`${MFA}/verify`, { headers, form: { code: '000000x' } });

    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHORIZED');
    expect(textBody.status).toBe(415);
    expect(form.status).toBe(400);
    expect(form.body.error.code).toBe('MFA_INVALID_TOKEN');
  });
});
