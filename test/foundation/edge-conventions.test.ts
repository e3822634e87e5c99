import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { BINARIES, testNeeding } from '../helpers/system-binaries.js';

describe('edge API conventions', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const authenticate = '/edge/management/v1/authenticate?method=password';

  test('unknown paths answer a JSON 404 in the error envelope, under /edge and elsewhere', async () => {
    for (const path of ['/nothing/here', '/edge/client/v1/no-such-thing', '/edge/management/v2/identities']) {
      const res = await server.client.get(path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: { code: 'NOT_FOUND', message: expect.any(String), requestId: res.header('request-id') },
        meta: { apiVersion: '1' },
      });
    }
  });

  test('under /oidc, unknown paths are a JSON 404 and wrong methods a JSON 405', async () => {
    const unknown = await server.client.get('/oidc/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    for (const [method, path, allow] of [
      ['POST', '/oidc/keys', 'GET, HEAD'],
      ['DELETE', '/oidc/token', 'POST'],
      ['POST', '/oidc/authorization', 'GET, HEAD'],
      ['PUT', '/.well-known/openid-configuration', 'GET, HEAD'],
    ] as const) {
      const res = await server.client.request(method, path);
      expect(res.status).toBe(405);
      expect(res.header('allow')).toBe(allow);
      expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
    }
  });

  test('a hostile auth request id is refused cleanly and never echoed', async () => {
    for (const id of ['%0Aset-cookie:x=1', '%E2%9C%93', 'a'.repeat(300)]) {
      const res = await server.client.get(`/oidc/login/username?authRequestID=${id}`);
      expect(res.status).toBeLessThan(500);
      expect(res.header('auth-request-id')).toBeUndefined();
      expect(res.header('set-cookie')).toBeUndefined();
    }
  });

  test('a body that is neither JSON nor form is refused with 415', async () => {
    const res = await server.client.post(authenticate, {
      headers: { 'content-type': 'text/xml' },
      body: '<username>admin</username>',
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  test('a body over 1 MiB is refused with 413, JSON and form alike', async () => {
    const big = 'x'.repeat(1024 * 1024 + 10);
    const json = await server.client.post(authenticate, { body: { username: big, password: 'p' } });
    expect(json.status).toBe(413);
    expect(json.body.error.code).toBe('REQUEST_ENTITY_TOO_LARGE');
    const form = await server.client.post(authenticate, { form: { username: big, password: 'p' } });
    expect(form.status).toBe(413);
  });

  test('a body just under the limit is parsed (koa-body limits raised to 1 MiB)', async () => {
    const res = await server.client.post(authenticate, {
      form: { username: 'u', password: 'p', pad: 'y'.repeat(900 * 1024) },
    });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_AUTH');
  });

  test('malformed JSON and missing fields are 400 COULD_NOT_VALIDATE naming the field', async () => {
    const broken = await server.client.post(authenticate, {
      headers: { 'content-type': 'application/json' },
      body: '{"username":',
    });
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'body' } });
    const missing = await server.client.post(authenticate, { body: { username: 'admin' } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'password' } });
    const badMethod = await server.client.post('/edge/management/v1/authenticate?method=telepathy', {
      body: {},
    });
    expect(badMethod.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'method' } });
  });

  test('form-encoded logins work like JSON ones', async () => {
    const res = await server.client.post(authenticate, {
      form: { username: 'admin', password: 'admin-password-1' },
    });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({});
  });

  test('every response carries a request id and no-store caching', async () => {
    const res = await server.client.get('/health/live');
    expect(res.header('request-id')).toMatch(/^[A-Za-z0-9]{12}$/);
    expect(res.header('cache-control')).toBe('no-store');
  });

  test('health endpoints answer anonymously', async () => {
    expect((await server.client.get('/health/live')).body).toEqual({ status: 'ok' });
    const ready = await server.client.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok' });
  });

  testNeeding([BINARIES.openssl])('the CA bundle is served as base64 PKCS#7 and as PEM', async () => {
    const pem = await server.client.get('/.well-known/est/cacerts', {
      headers: { accept: 'application/x-pem-file' },
    });
    expect(pem.header('content-type')).toContain('application/x-pem-file');
    const certs = pem.text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
    expect(certs).toHaveLength(2);
    expect(certs.map((c) => new X509Certificate(c).subject)).toEqual(['CN=svc root CA', 'CN=svc signing CA']);

    const p7 = await server.client.get('/.well-known/est/cacerts');
    expect(p7.header('content-type')).toContain('application/pkcs7-mime');
    const dir = mkdtempSync(join(tmpdir(), 'svc-p7-'));
    writeFileSync(join(dir, 'ca.p7'), Buffer.from(p7.text, 'base64'));
    const printed = execFileSync('openssl', [
      'pkcs7',
      '-inform',
      'DER',
      '-in',
      join(dir, 'ca.p7'),
      '-print_certs',
    ]).toString();
    expect(printed.match(/-----BEGIN CERTIFICATE-----/g)).toHaveLength(2);
    expect(printed).toContain('subject=CN = svc signing CA');
  });

  test('the PKI PEM files are written to the data directory', () => {
    const bundle = readFileSync(join(server.dataDir, 'pki', 'ca.pem'), 'utf8');
    expect(bundle).toBe(server.ca);
    const leaf = new X509Certificate(readFileSync(join(server.dataDir, 'pki', 'server-chain.pem')));
    expect(leaf.subjectAltName).toContain('DNS:localhost');
    expect(leaf.subjectAltName).toContain('IP Address:127.0.0.1');
  });

  test('the server keeps repeated Authorization headers', async () => {
    // Two bearer values that are not ours: the answer must name the bearer realm, not "missing".
    const res = await server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: ['Bearer aaa.bbb.ccc', 'Bearer ddd.eee.fff'] },
    });
    expect(res.status).toBe(401);
    expect(res.header('www-authenticate')).toContain('realm="svc-oidc", error="invalid"');
  });
});

describe('a controller without an edge section', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      overrides: (tree) => {
        delete tree.edge;
      },
    });
  });
  afterAll(() => server.close());

  test('serves health but no edge API and no OIDC', async () => {
    expect((await server.client.get('/health/ready')).status).toBe(200);
    expect(
      (await server.client.post('/edge/management/v1/authenticate?method=password', { body: {} })).status,
    ).toBe(404);
    expect((await server.client.get('/oidc/.well-known/openid-configuration')).status).toBe(404);
  });
});
