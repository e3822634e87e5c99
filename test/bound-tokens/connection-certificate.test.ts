import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { connect, type TLSSocket } from 'node:tls';
import { presentedCertX5tS256 } from '../../src/crypto/connection-certificate.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { enrolledDevice, type Device } from './bound-fixtures.js';

/**
 * A bound token is compared with the certificate of the connection it came over, worked out once
 * per connection: that is sound only if the certificate of a connection cannot change after its
 * handshake.
 */
describe('the client certificate of a connection', () => {
  let server: TestServer;
  let device: Device;
  beforeAll(async () => {
    server = await startTestServer();
    device = await enrolledDevice(server, managementApi(server, await server.adminToken()), 'tls-device');
  });
  afterAll(() => server.close());

  /** A raw TLS 1.2 connection to the controller presenting the device's certificate. */
  function tls12(): Promise<TLSSocket> {
    const url = new URL(server.url);
    return new Promise((resolve, reject) => {
      const socket = connect({
        host: url.hostname,
        port: Number(url.port),
        ca: server.ca,
        cert: device.cert,
        key: device.key,
        maxVersion: 'TLSv1.2',
        servername: 'localhost',
      });
      socket.once('secureConnect', () => resolve(socket));
      socket.once('error', reject);
    });
  }

  test('the listener refuses a TLS 1.2 renegotiation, which could present another certificate', async () => {
    const socket = await tls12();
    socket.on('error', () => undefined);
    let answer = '';
    socket.on('data', (d) => (answer += d));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));

    socket.renegotiate({ rejectUnauthorized: false }, () => undefined);
    socket.write(`GET /health/ready HTTP/1.1\r\nhost: ${new URL(server.url).host}\r\n\r\n`);
    await closed;

    // The connection is closed without an answer to the request sent after the renegotiation.
    expect(answer).toBe('');
  });

  test('on the server side of a real connection: the leaf of the handshake, read from the socket once', async () => {
    const seen = new Promise<TLSSocket>((resolve) =>
      server.app.listeners[0]!.servers[0]!.server.once('secureConnection', resolve),
    );
    const client = await tls12();
    const socket = await seen;
    let reads = 0;
    const read = socket.getPeerX509Certificate.bind(socket);
    socket.getPeerX509Certificate = () => (reads++, read());

    const first = presentedCertX5tS256(socket);
    const second = presentedCertX5tS256(socket);

    expect(first).toBe(device.thumbprint);
    expect(second).toBe(device.thumbprint);
    expect(reads).toBe(1);
    client.destroy();
  });
});
