import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createPrivateKey } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import * as oc from 'openid-client';
import { generateClientKeyAndCsr, generateRootCa } from '../../src/crypto/pki.js';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { oidcLogin, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  managementApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { discoverClient, issuerOf } from './oidc-fixtures.js';

describe('OIDC login with a client certificate (mutual TLS) and with an external JWT', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  /** An identity enrolled by OTT: its certificate comes from our PKI. */
  async function certIdentity(name: string) {
    const id = await createIdentity(api, { name, type: 'Device', isAdmin: false, enrollment: { ott: true } });
    const token = (await identityDetail(api, id)).enrollment.ott.token;
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: name });
    const enrolled = await server.client.post(`${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
    if (enrolled.status !== 200) throw new Error(`enroll failed: ${enrolled.status} ${enrolled.text}`);
    return { id, cert: enrolled.body.data.cert as string, key: keyPem };
  }

  test('a client certificate of our PKI logs in without a method hint; amr cert, z_ice true', async () => {
    const device = await certIdentity('oidc-cert-device');
    const mtls = server.newClient({ cert: device.cert, key: device.key });

    const { started, tokens } = await oidcLogin(mtls, { body: {} });

    expect(started.loginLocation.startsWith('/oidc/login/cert?')).toBe(true);
    const keys = createLocalJWKSet((await server.client.get('/oidc/keys')).body);
    const { payload } = await jwtVerify(tokens.access_token, keys, { issuer: issuerOf(server) });
    expect(payload).toMatchObject({ sub: device.id, amr: ['cert'], z_ice: true, z_t: 'a' });
    const me = await mtls.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(me.body.data.id).toBe(device.id);
  });

  test('openid-client over mutual TLS: the cert login and the code exchange', async () => {
    const device = await certIdentity('oidc-cert-openid-client');
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    const { config, close } = await discoverClient(server, issuerOf(server), {
      cert: device.cert,
      key: device.key,
    });
    try {
      const verifier = oc.randomPKCECodeVerifier();
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: 'http://localhost:8123/auth/callback',
        scope: 'openid',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        method: 'cert',
        state: 'st',
      });
      const start = await mtls.get(url.pathname + url.search);
      const loginUrl = new URL(start.header('location')!, server.url);
      const login = await mtls.post(loginUrl.pathname, {
        body: { authRequestId: loginUrl.searchParams.get('authRequestID') },
      });
      const tokens = await oc.authorizationCodeGrant(config, new URL(login.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: 'st',
      });

      expect(login.status).toBe(303);
      expect(tokens.claims()!.sub).toBe(device.id);
      expect(tokens.claims()!.amr).toEqual(['cert']);
    } finally {
      await close();
    }
  });

  test('the cert login without a certificate, or with one we do not know, is 401 INVALID_AUTH', async () => {
    const stranger = await generateRootCa({ commonName: 'stranger' });
    const strangerClient = server.newClient({ cert: stranger.certPem, key: stranger.keyPem });
    const started = await startAuthorization(server.client, { method: 'cert' });

    const none = await submitLogin(server.client, started, { body: {} });
    const unknown = await submitLogin(strangerClient, started, { body: {} });

    expect(none.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe('INVALID_AUTH');
  });

  test('an external JWT of an allowed signer logs in; amr ext-jwt', async () => {
    const signerKey = await generateRootCa({ commonName: 'oidc idp key' });
    const signer = await api.post('/external-jwt-signers', {
      body: {
        name: 'oidc-idp',
        issuer: 'https://idp.oidc-test.example',
        audience: 'svc-test',
        certPem: signerKey.certPem,
      },
    });
    expect(signer.status).toBe(201);
    const policy = await api.post('/auth-policies', {
      body: {
        name: 'ext-jwt-allowed',
        primary: { extJwt: { allowed: true, allowedSigners: [signer.body.data.id] } },
      },
    });
    expect(policy.status).toBe(201);
    const id = await createIdentity(api, {
      name: 'oidc-ext-jwt-user',
      isAdmin: false,
      externalId: 'ext-subject-1',
      authPolicyId: policy.body.data.id,
    });
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('https://idp.oidc-test.example')
      .setAudience('svc-test')
      .setSubject('ext-subject-1')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(createPrivateKey(signerKey.keyPem));

    const { started, tokens } = await oidcLogin(server.client, {
      method: 'ext-jwt',
      body: {},
      headers: { authorization: `Bearer ${jwt}` },
    });
    const wrong = await submitLogin(
      server.client,
      await startAuthorization(server.client, { method: 'ext-jwt' }),
      {
        body: {},
        headers: { authorization: 'Bearer not-a-jwt' },
      },
    );

    expect(started.loginLocation.startsWith('/oidc/login/ext-jwt?')).toBe(true);
    const keys = createLocalJWKSet((await server.client.get('/oidc/keys')).body);
    const { payload } = await jwtVerify(tokens.access_token, keys);
    expect(payload).toMatchObject({ sub: id, amr: ['ext-jwt'], z_ice: false });
    const challenge = (error: string, description: string) =>
      `Bearer realm="svc-primary-ext-jwt", error="${error}", error_description="${description}", ` +
      `id="${signer.body.data.id}", issuer="https://idp.oidc-test.example"`;
    expectError(wrong, {
      status: 401,
      code: 'INVALID_AUTH',
      challenge: challenge('invalid', 'token is invalid'),
    });
    const expiredJwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('https://idp.oidc-test.example')
      .setAudience('svc-test')
      .setSubject('ext-subject-1')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
      .sign(createPrivateKey(signerKey.keyPem));
    const expired = await submitLogin(
      server.client,
      await startAuthorization(server.client, { method: 'ext-jwt' }),
      { body: {}, headers: { authorization: `Bearer ${expiredJwt}` } },
    );
    expectError(expired, {
      status: 401,
      code: 'INVALID_AUTH',
      challenge: challenge('expired', 'token expired'),
    });
  });
});
