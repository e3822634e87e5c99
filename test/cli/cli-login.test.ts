import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRootCa } from '../../src/crypto/pki.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, type TestServer } from '../helpers/test-server.js';
import { MGMT, mode, oneLine, startCliFixture, type CliFixture } from './cli-fixture.js';

describe('svc login', () => {
  let server: TestServer;
  let caFile: string;
  let svc: CliFixture['svc'];
  let fixture: CliFixture;
  beforeAll(async () => {
    fixture = await startCliFixture();
    ({ server, caFile, svc } = fixture);
  });
  afterAll(() => fixture.close());

  describe('login', () => {
    test('login stores the url, token and CA in $XDG_CONFIG_HOME/svc/session.json with mode 0600', async () => {
      const other = mkdtempSync(join(tmpdir(), 'svc-cli-login-'));

      const res = await svc(
        ['login', server.url, '-u', ADMIN_USERNAME, '-p', ADMIN_PASSWORD, '--ca', caFile],
        {
          home: other,
        },
      );

      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`as ${ADMIN_USERNAME}`);
      const file = join(other, 'config', 'svc', 'session.json');
      expect(mode(file)).toBe(0o600);
      expect(mode(join(other, 'config', 'svc'))).toBe(0o700);
      const session = JSON.parse(readFileSync(file, 'utf8'));
      expect(session).toEqual({ url: server.url, token: expect.any(String), ca: server.ca });
      const me = await server.client.get(`${MGMT}/current-identity`, {
        headers: { 'svc-session': session.token },
      });
      expect(me.status).toBe(200);
      expect(me.body.data.name).toBe(ADMIN_USERNAME);
      rmSync(other, { recursive: true, force: true });
    });

    test('login without --ca refuses to trust the server and says how to pass the CA', async () => {
      const other = mkdtempSync(join(tmpdir(), 'svc-cli-login-'));

      const res = await svc(['login', server.url, '-u', ADMIN_USERNAME, '-p', ADMIN_PASSWORD], {
        home: other,
      });

      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(/^svc: .*--ca <data dir>\/pki\/ca\.pem/);
      expect(existsSync(join(other, 'config', 'svc', 'session.json'))).toBe(false);
      rmSync(other, { recursive: true, force: true });
    });

    test('login with a CA that did not issue the server certificate refuses the server', async () => {
      const other = mkdtempSync(join(tmpdir(), 'svc-cli-login-'));
      const stranger = await generateRootCa({ commonName: 'Some other CA' });
      writeFileSync(join(other, 'other-ca.pem'), stranger.certPem);

      const res = await svc(
        ['login', server.url, '-u', ADMIN_USERNAME, '-p', ADMIN_PASSWORD, '--ca', 'other-ca.pem'],
        {
          home: other,
        },
      );

      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(
        /^svc: cannot verify the certificate of https:\/\/127\.0\.0\.1:\d+ with the stored CA/,
      );
      expect(existsSync(join(other, 'config', 'svc', 'session.json'))).toBe(false);
      rmSync(other, { recursive: true, force: true });
    });

    test('login --yes trusts the CA sent on first contact and prints its fingerprints', async () => {
      const other = mkdtempSync(join(tmpdir(), 'svc-cli-login-'));

      const res = await svc(['login', server.url, '-u', ADMIN_USERNAME, '-p', ADMIN_PASSWORD, '--yes'], {
        home: other,
      });

      expect(res.code).toBe(0);
      const root = new X509Certificate(server.ca);
      expect(res.stderr).toContain(root.fingerprint256);
      const session = JSON.parse(readFileSync(join(other, 'config', 'svc', 'session.json'), 'utf8'));
      expect(session.ca).toBe(server.ca);
      rmSync(other, { recursive: true, force: true });
    });

    test('a wrong password exits non-zero with one line on stderr naming INVALID_AUTH', async () => {
      const other = mkdtempSync(join(tmpdir(), 'svc-cli-login-'));

      const res = await svc(
        ['login', server.url, '-u', ADMIN_USERNAME, '-p', 'wrong-password', '--ca', caFile],
        {
          home: other,
        },
      );

      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(/^svc: .*\(INVALID_AUTH\)/);
      expect(existsSync(join(other, 'config', 'svc', 'session.json'))).toBe(false);
      rmSync(other, { recursive: true, force: true });
    });

    test('a command without a session tells the user to log in', async () => {
      const other = mkdtempSync(join(tmpdir(), 'svc-cli-login-'));

      const res = await svc(['edge', 'list', 'identities'], { home: other });

      expect(res.code).toBe(1);
      expect(res.stderr).toBe('svc: not logged in: run svc login <url> -u <user> -p <password> first\n');
      rmSync(other, { recursive: true, force: true });
    });
  });
});
