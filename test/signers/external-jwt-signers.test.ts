import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateRootCa } from '../../src/crypto/pki.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';

describe('external JWT signers', () => {
  let server: TestServer;
  let api: ManagementApi;
  let certPem: string;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    certPem = (await generateRootCa({ commonName: 'signer key' })).certPem;
  });
  afterAll(() => server.close());

  async function createSigner(body: Record<string, unknown>): Promise<string> {
    const res = await api.post('/external-jwt-signers', { body });
    if (res.status !== 201) throw new Error(`signer create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  const detail = async (id: string) => (await api.get(`/external-jwt-signers/${id}`)).body.data;

  test('a signer is created with its defaults: enabled, claim sub, matched against externalId', async () => {
    const res = await api.post('/external-jwt-signers', {
      body: {
        name: 'defaults',
        issuer: 'https://idp.defaults.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://idp.defaults.example/jwks',
      },
    });

    expect(res.status).toBe(201);
    expect(res.body.data._links.self.href).toBe(`./external-jwt-signers/${res.body.data.id}`);
    expect(await detail(res.body.data.id)).toMatchObject({
      id: res.body.data.id,
      name: 'defaults',
      enabled: true,
      issuer: 'https://idp.defaults.example',
      audience: 'svc-tests',
      certPem: null,
      jwksEndpoint: 'https://idp.defaults.example/jwks',
      kid: null,
      claimsProperty: 'sub',
      useExternalId: true,
      externalAuthUrl: null,
      clientId: null,
      scopes: [],
      maxTokenLifetimeMinutes: 1440,
    });
  });

  test('every field given on create is stored and shown', async () => {
    const id = await createSigner({
      name: 'full',
      enabled: false,
      issuer: 'https://idp.full.example',
      audience: 'svc-audience',
      certPem,
      kid: 'key-1',
      claimsProperty: 'email',
      useExternalId: false,
      externalAuthUrl: 'https://idp.full.example/authorize',
      clientId: 'svc-client',
      scopes: ['openid', 'email'],
      maxTokenLifetimeMinutes: 60,
    });

    const d = await detail(id);
    expect(d).toMatchObject({
      enabled: false,
      audience: 'svc-audience',
      jwksEndpoint: null,
      kid: 'key-1',
      claimsProperty: 'email',
      useExternalId: false,
      externalAuthUrl: 'https://idp.full.example/authorize',
      clientId: 'svc-client',
      scopes: ['openid', 'email'],
      maxTokenLifetimeMinutes: 60,
    });
    expect(d.certPem.trim()).toBe(certPem.trim());
  });

  test.each([
    [{ issuer: 'https://i1.example', audience: 'svc-tests', jwksEndpoint: 'https://i1.example/k' }, 'name'],
    [{ name: 'n1', jwksEndpoint: 'https://i1.example/k' }, 'issuer'],
    [{ name: 'n2', issuer: 'https://i2.example', audience: 'svc-tests' }, 'certPem'],
    [{ name: 'n2a', issuer: 'https://i2a.example', jwksEndpoint: 'https://i2a.example/k' }, 'audience'],
    [
      { name: 'n2b', issuer: 'https://i2b.example', audience: 'a', jwksEndpoint: 'http://idp.example/k' },
      'jwksEndpoint',
    ],
    [
      {
        name: 'n3',
        issuer: 'https://i3.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://i3.example/k',
        certPem: 'x',
      },
      'certPem',
    ],
    [
      { name: 'n4', issuer: 'https://i4.example', audience: 'svc-tests', certPem: 'not a certificate' },
      'certPem',
    ],
    [
      { name: 'n5', issuer: 'https://i5.example', audience: 'svc-tests', jwksEndpoint: 'ftp://i5.example/k' },
      'jwksEndpoint',
    ],
    [
      {
        name: 'n6',
        issuer: 'https://i6.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://i6.example/k',
        scopes: 'openid',
      },
      'scopes',
    ],
    [
      {
        name: 'n7',
        issuer: 'https://i7.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://i7.example/k',
        enabled: 'yes',
      },
      'enabled',
    ],
    [
      {
        name: 'n8',
        issuer: 'https://i8.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://i8.example/k',
        externalAuthUrl: 'nope',
      },
      'externalAuthUrl',
    ],
    ...[0, -5, 525_601, 1.5, 'a day', null].map(
      (maxTokenLifetimeMinutes): [Record<string, unknown>, string] => [
        {
          name: 'n9',
          issuer: 'https://i9.example',
          audience: 'svc-tests',
          jwksEndpoint: 'https://i9.example/k',
          maxTokenLifetimeMinutes,
        },
        'maxTokenLifetimeMinutes',
      ],
    ),
  ])('a bad create body %j is refused naming %s', async (body, field) => {
    const res = await api.post('/external-jwt-signers', { body });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
  });

  test('a garbled certificate inside PEM armour is refused naming certPem', async () => {
    const garbled = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';

    const res = await api.post('/external-jwt-signers', {
      body: { name: 'garbled', issuer: 'https://g.example', audience: 'svc-tests', certPem: garbled },
    });

    expect(res.status).toBe(400);
    expect(res.body.error.cause.field).toBe('certPem');
  });

  test('a second signer with the same issuer or name is 409 naming the field', async () => {
    await createSigner({
      name: 'unique-a',
      issuer: 'https://unique.example',
      audience: 'svc-tests',
      jwksEndpoint: 'https://unique.example/k',
    });

    const sameIssuer = await api.post('/external-jwt-signers', {
      body: {
        name: 'unique-b',
        issuer: 'https://unique.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://unique.example/k',
      },
    });
    const sameName = await api.post('/external-jwt-signers', {
      body: {
        name: 'unique-a',
        issuer: 'https://unique-2.example',
        audience: 'svc-tests',
        jwksEndpoint: 'https://unique.example/k',
      },
    });

    expect(sameIssuer.status).toBe(409);
    expect(sameIssuer.body.error.cause.field).toBe('issuer');
    expect(sameName.status).toBe(409);
    expect(sameName.body.error.cause.field).toBe('name');
  });

  test('PATCH can switch the key source from JWKS to a certificate', async () => {
    const id = await createSigner({
      name: 'switch',
      issuer: 'https://switch.example',
      audience: 'svc-tests',
      jwksEndpoint: 'https://switch.example/k',
    });

    const half = await api.patch(`/external-jwt-signers/${id}`, { body: { certPem } });
    const whole = await api.patch(`/external-jwt-signers/${id}`, { body: { certPem, jwksEndpoint: null } });

    expect(half.status).toBe(400);
    expect(whole.status).toBe(200);
    expect(await detail(id)).toMatchObject({
      jwksEndpoint: null,
      issuer: 'https://switch.example',
      audience: 'svc-tests',
    });
  });

  test('maxTokenLifetimeMinutes round-trips through PATCH and PUT, up to a year', async () => {
    const id = await createSigner({
      name: 'lifetime',
      issuer: 'https://lifetime.example',
      audience: 'svc-tests',
      jwksEndpoint: 'https://lifetime.example/k',
      maxTokenLifetimeMinutes: '30',
    });
    const created = (await detail(id)).maxTokenLifetimeMinutes;

    const patched = await api.patch(`/external-jwt-signers/${id}`, {
      body: { maxTokenLifetimeMinutes: 525_600 },
    });
    const afterPatch = (await detail(id)).maxTokenLifetimeMinutes;
    const tooLong = await api.patch(`/external-jwt-signers/${id}`, {
      body: { maxTokenLifetimeMinutes: 525_601 },
    });
    const afterRefusal = (await detail(id)).maxTokenLifetimeMinutes;
    const put = await api.put(`/external-jwt-signers/${id}`, {
      body: { name: 'lifetime', issuer: 'https://lifetime.example', audience: 'svc-tests', certPem },
    });

    expect(created).toBe(30);
    expect(patched.status).toBe(200);
    expect(afterPatch).toBe(525_600);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'maxTokenLifetimeMinutes' },
    });
    expect(afterRefusal).toBe(525_600);
    expect(put.status).toBe(200);
    expect((await detail(id)).maxTokenLifetimeMinutes).toBe(1440);
  });

  test('PUT replaces the signer: omitted members take the defaults', async () => {
    const id = await createSigner({
      name: 'put-me',
      issuer: 'https://put.example',
      audience: 'svc-tests',
      jwksEndpoint: 'https://put.example/k',
      claimsProperty: 'email',
      scopes: ['a'],
    });

    const res = await api.put(`/external-jwt-signers/${id}`, {
      body: { name: 'put-done', issuer: 'https://put.example', audience: 'svc-tests', certPem },
    });

    expect(res.status).toBe(200);
    expect(await detail(id)).toMatchObject({
      name: 'put-done',
      jwksEndpoint: null,
      claimsProperty: 'sub',
      scopes: [],
    });
  });

  test('a signer named by a policy cannot be deleted until the policy lets go of it', async () => {
    const primaryId = await createSigner({
      name: 'held-primary',
      issuer: 'https://held1.example',
      audience: 'svc-tests',
      jwksEndpoint: 'https://held1.example/k',
    });
    const secondaryId = await createSigner({
      name: 'held-secondary',
      issuer: 'https://held2.example',
      audience: 'svc-tests',
      jwksEndpoint: 'https://held2.example/k',
    });
    const policy = await api.post('/auth-policies', {
      body: {
        name: 'holder',
        primary: { extJwt: { allowed: true, allowedSigners: [primaryId] } },
        secondary: { requireExtJwt: secondaryId },
      },
    });
    const policyId = policy.body.data.id;

    const refusedPrimary = await api.delete(`/external-jwt-signers/${primaryId}`);
    const refusedSecondary = await api.delete(`/external-jwt-signers/${secondaryId}`);
    await api.patch(`/auth-policies/${policyId}`, {
      body: { primary: { extJwt: { allowedSigners: [] } }, secondary: { requireExtJwt: null } },
    });
    const deletedPrimary = await api.delete(`/external-jwt-signers/${primaryId}`);
    const deletedSecondary = await api.delete(`/external-jwt-signers/${secondaryId}`);

    expect(refusedPrimary.status).toBe(409);
    expect(refusedSecondary.status).toBe(409);
    expect(deletedPrimary.status).toBe(200);
    expect(deletedSecondary.status).toBe(200);
    expect((await api.get(`/external-jwt-signers/${primaryId}`)).status).toBe(404);
  });

  test('the client API lists enabled signers anonymously, without key material', async () => {
    const enabled = await createSigner({
      name: 'public-enabled',
      issuer: 'https://public.example',
      audience: 'svc-tests',
      certPem,
      externalAuthUrl: 'https://public.example/auth',
      clientId: 'public-client',
      scopes: ['openid'],
    });
    const disabled = await createSigner({
      name: 'public-disabled',
      issuer: 'https://hidden.example',
      audience: 'svc-tests',
      certPem,
      enabled: false,
    });

    const res = await server.client.get('/edge/client/v1/external-jwt-signers?limit=500');

    expect(res.status).toBe(200);
    const ids = res.body.data.map((s: { id: string }) => s.id);
    expect(ids).toContain(enabled);
    expect(ids).not.toContain(disabled);
    const shown = res.body.data.find((s: { id: string }) => s.id === enabled);
    expect(shown).toEqual({
      id: enabled,
      name: 'public-enabled',
      issuer: 'https://public.example',
      externalAuthUrl: 'https://public.example/auth',
      clientId: 'public-client',
      scopes: ['openid'],
    });
  });

  test('the management list filters and needs an admin', async () => {
    const res = await api.get(`/external-jwt-signers?filter=${encodeURIComponent('name = "full"')}`);
    const anonymous = await server.client.get('/edge/management/v1/external-jwt-signers');

    expect(res.status).toBe(200);
    expect(res.body.data.map((s: { name: string }) => s.name)).toEqual(['full']);
    expect(res.body.meta.pagination.totalCount).toBe(1);
    expect(anonymous.status).toBe(401);
  });
});
