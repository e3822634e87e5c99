import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import {
  generateClientKeyAndCsr,
  generateRootCa,
  generateSigningCa,
  issueServerCert,
  type KeyedCert,
} from '../../src/crypto/pki.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { CLIENT, managementApi, pendingEnrollment } from '../identities/identity-fixtures.js';

/** The certificate the server presents in a handshake that trusts only `ca`. */
function presentedCert(url: string, ca: string): Promise<X509Certificate> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca, servername: 'localhost' }, () => {
      const raw = socket.getPeerX509Certificate();
      socket.end();
      if (raw) resolve(raw);
      else reject(new Error('no peer certificate'));
    });
    socket.on('error', reject);
  });
}

describe('configured tls.* and pki.signing* PEM files replace the generated PKI (docs/operations.md)', () => {
  let server: TestServer;
  let dir: string;
  let root: KeyedCert;
  let serverCert: KeyedCert;
  let signing: KeyedCert;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-own-pki-'));
    root = await generateRootCa({ commonName: 'operator root CA' });
    serverCert = await issueServerCert(root, { hosts: ['localhost', '127.0.0.1'] });
    signing = await generateSigningCa(root, { commonName: 'operator client signing CA' });
    const file = (name: string, pem: string) => {
      writeFileSync(join(dir, name), pem);
      return join(dir, name);
    };
    server = await startTestServer({
      env: {
        SVC_TLS_CERT: file('server.pem', serverCert.certPem),
        SVC_TLS_KEY: file('server.key', serverCert.keyPem),
        SVC_TLS_CA: file('ca.pem', root.certPem),
        SVC_PKI_SIGNING_CERT: file('signing.pem', signing.certPem),
        SVC_PKI_SIGNING_KEY: file('signing.key', signing.keyPem),
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the server presents the configured certificate, trusted through the configured CA alone', async () => {
    const presented = await presentedCert(server.url, root.certPem);

    expect(presented.fingerprint256).toBe(new X509Certificate(serverCert.certPem).fingerprint256);
    // The published bundle is the configured CA and the signing CA, each one readable block.
    const bundle = server.app.pki.caBundlePem.match(
      /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n/g,
    );
    expect(bundle?.map((pem) => new X509Certificate(pem).fingerprint256)).toEqual(
      [root, signing].map((c) => new X509Certificate(c.certPem).fingerprint256),
    );
    const health = await server.client.get('/health/live');
    expect(health.status).toBe(200);
  });

  test('client certificates are issued by the configured signing CA and log in over mutual TLS', async () => {
    const api = managementApi(server, await server.adminToken());
    const pending = await pendingEnrollment(api, 'own-pki-device', { ott: true });
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'own-pki-device' });

    const res = await server.client.post(`${CLIENT}/enroll/ott`, {
      body: { token: pending.token, clientCsr: csrPem },
    });

    expect(res.status).toBe(200);
    const leaf = new X509Certificate(res.body.data.cert);
    const signingCa = new X509Certificate(signing.certPem);
    expect(leaf.checkIssued(signingCa)).toBe(true);
    expect(leaf.verify(signingCa.publicKey)).toBe(true);
    const mtls = server.newClient({ cert: res.body.data.cert, key: keyPem });
    const login = await mtls.post(`${CLIENT}/authenticate?method=cert`, { body: {} });
    expect(login.status).toBe(200);
    expect(login.body.data.identity.id).toBe(pending.identityId);
  });
});
