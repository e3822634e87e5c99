import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import {
  generateClientKeyAndCsr,
  generateRootCa,
  generateSigningCa,
  issueServerCert,
  signClientCsr,
} from './pki.js';
import type { KeyedCert } from './pki.js';

let root: KeyedCert;
let signing: KeyedCert;
let server: Server;
let port: number;

interface Reply {
  status?: number;
  body: string;
}

function get(host: string, options: { ca: string; key?: string; cert?: string }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/', ...options, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  root = await generateRootCa({ commonName: 'TLS Test Root' });
  signing = await generateSigningCa(root, { commonName: 'TLS Test Signing CA' });
  const serverCert = await issueServerCert(signing, { hosts: ['localhost', '127.0.0.1'] });
  // The server sends its chain (leaf + signing CA); clients hold only the root. Node 20 has no
  // partial-chain option, so verifying client certs needs the root in `ca`, not only the signing CA.
  const options = {
    key: serverCert.keyPem,
    cert: serverCert.certPem + signing.certPem,
    ca: [root.certPem, signing.certPem],
    requestCert: true,
    rejectUnauthorized: false,
  };
  server = createServer(options, (req, res) => {
    const socket = req.socket as TLSSocket;
    const peer = socket.getPeerCertificate();
    res.end(socket.authorized ? `client ${peer.subject.CN} ${peer.subjectaltname}` : 'unauthenticated');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('certificates in real TLS', () => {
  it('lets a client that trusts only the root reach the server by DNS name', async () => {
    const reply = await get('localhost', { ca: root.certPem });
    expect(reply).toEqual({ status: 200, body: 'unauthenticated' });
  });

  it('lets a client that trusts only the root reach the server by IP address', async () => {
    const reply = await get('127.0.0.1', { ca: root.certPem });
    expect(reply.status).toBe(200);
  });

  it('is refused by a client that trusts a different root', async () => {
    const stranger = await generateRootCa({ commonName: 'TLS Test Root' });
    await expect(get('localhost', { ca: stranger.certPem })).rejects.toThrow(/certificate/i);
  });

  it('authenticates a client with a certificate issued from its CSR', async () => {
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'ignored' });
    const cert = await signClientCsr(signing, { csrPem, identityId: 'id-42', trustDomain: 'svc.test' });
    const reply = await get('localhost', { ca: root.certPem, key: keyPem, cert });
    expect(reply.body).toBe('client id-42 URI:spiffe://svc.test/identity/id-42');
  });

  it('does not authenticate a client whose certificate comes from another CA', async () => {
    const otherRoot = await generateRootCa({ commonName: 'TLS Test Root' });
    const otherSigning = await generateSigningCa(otherRoot, { commonName: 'TLS Test Signing CA' });
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'ignored' });
    const cert = await signClientCsr(otherSigning, { csrPem, identityId: 'id-42', trustDomain: 'svc.test' });
    const reply = await get('localhost', {
      ca: root.certPem,
      key: keyPem,
      cert: cert + otherSigning.certPem,
    });
    expect(reply.body).toBe('unauthenticated');
  });
});
