import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, decodeJwt } from 'jose';
import { certFingerprint, verifyChain } from '../../src/crypto/certificates.js';
import { generateRootCa, issueClientCert } from '../../src/crypto/pki.js';
import type { TestServer } from '../helpers/test-server.js';
import { MGMT, mode, oneLine, startCliFixture, type CliFixture } from './cli-fixture.js';
import { runSvcInTerminal } from './run-svc.js';

describe('svc enroll', () => {
  let server: TestServer;
  let home: string;
  let admin: CliFixture['admin'];
  let svc: CliFixture['svc'];
  let api: CliFixture['api'];
  let detailByName: CliFixture['detailByName'];
  let fixture: CliFixture;
  beforeAll(async () => {
    fixture = await startCliFixture();
    ({ server, home, admin, svc, api, detailByName } = fixture);
  });
  afterAll(() => fixture.close());

  describe('enroll', () => {
    test('enroll an ott JWT writes key (0600), certificate chain and ca.pem; the certificate logs in', async () => {
      const jwtFile = join(home, 'cli-ott-1.jwt');
      await svc(['edge', 'create', 'identity', 'device', 'cli-ott-1', '-o', jwtFile]);
      const out = join(home, 'ott-out');

      const res = await svc(['enroll', jwtFile, '--out', out]);

      expect(res).toMatchObject({ code: 0, stderr: '' });
      const certPem = readFileSync(join(out, 'cli-ott-1.cert.pem'), 'utf8');
      const keyPem = readFileSync(join(out, 'cli-ott-1.key.pem'), 'utf8');
      expect(mode(join(out, 'cli-ott-1.key.pem'))).toBe(0o600);
      expect(mode(join(out, 'cli-ott-1.cert.pem'))).toBe(0o600);
      expect(readFileSync(join(out, 'ca.pem'), 'utf8')).toBe(server.ca);
      expect(await verifyChain(certPem, [certPem], [server.ca], new Date())).toBe(true);
      const detail = await detailByName('cli-ott-1');
      expect(detail.enrollment).toEqual({});
      expect(detail.authenticators.cert.fingerprint).toBe(
        new X509Certificate(certPem).fingerprint.replace(/:/g, '').toLowerCase(),
      );
      const mtls = server.newClient({ cert: certPem, key: keyPem });
      const login = await mtls.post('/edge/client/v1/authenticate?method=cert', { body: {} });
      expect(login.status).toBe(200);
      expect(login.body.data.identityId).toBe(detail.id);
    });

    test('enrolling the same ott JWT twice fails the second time and keeps the written files', async () => {
      const jwtFile = join(home, 'cli-ott-2.jwt');
      await svc(['edge', 'create', 'identity', 'device', 'cli-ott-2', '-o', jwtFile]);
      expect((await svc(['enroll', jwtFile, '--out', join(home, 'ott-2a')])).code).toBe(0);

      const again = await svc(['enroll', jwtFile, '--out', join(home, 'ott-2b')]);

      expect(again.code).toBe(1);
      expect(oneLine(again.stderr)).toBe(true);
      expect(again.stderr).toMatch(/INVALID_ENROLLMENT_TOKEN/);
      expect(existsSync(join(home, 'ott-2b', 'cli-ott-2.key.pem'))).toBe(false);
      expect(existsSync(join(home, 'ott-2a', 'cli-ott-2.key.pem'))).toBe(true);
    });

    test('a JWT not signed by the server it names is refused before the token is spent', async () => {
      const jwtFile = join(home, 'cli-ott-3.jwt');
      await svc(['edge', 'create', 'identity', 'device', 'cli-ott-3', '-o', jwtFile]);
      const claims = decodeJwt(readFileSync(jwtFile, 'utf8'));
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256' }).sign(privateKey);
      const forgedFile = join(home, 'forged.jwt');
      writeFileSync(forgedFile, forged);

      const res = await svc(['enroll', forgedFile, '--out', join(home, 'forged-out')]);

      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^svc: the enrollment JWT is not signed by the server at https:\/\//);
      expect(existsSync(join(home, 'forged-out', 'forged.key.pem'))).toBe(false);
      const detail = await detailByName('cli-ott-3');
      expect(Object.keys(detail.enrollment)).toEqual(['ott']);
    });

    test('enroll a updb JWT with --password-stdin; the password then logs in through the API', async () => {
      const jwtFile = join(home, 'cli-updb-1.jwt');
      await svc([
        'edge',
        'create',
        'identity',
        'user',
        'cli-updb-1',
        '--updb',
        'cli-updb-1-login',
        '-o',
        jwtFile,
      ]);

      const res = await svc(['enroll', jwtFile, '--password-stdin'], { input: 'Correct-horse-9\n' });

      expect(res).toMatchObject({ code: 0, stderr: '' });
      const login = await server.client.post('/edge/client/v1/authenticate?method=password', {
        body: { username: 'cli-updb-1-login', password: 'Correct-horse-9' },
      });
      expect(login.status).toBe(200);
      expect(login.body.data.identity.name).toBe('cli-updb-1');
    });

    test('enroll a updb JWT on a terminal asks for the password twice without echoing it', async () => {
      const jwtFile = join(home, 'cli-updb-tty.jwt');
      await svc([
        'edge',
        'create',
        'identity',
        'user',
        'cli-updb-tty',
        '--updb',
        'cli-updb-tty-login',
        '-o',
        jwtFile,
      ]);

      const res = await runSvcInTerminal(['enroll', jwtFile], { home }, [
        ['New password: ', 'Typed-secret-77'],
        ['Repeat the password: ', 'Typed-secret-77'],
      ]);

      expect(res.code).toBe(0);
      expect(res.screen).toContain('Enrolled identity');
      expect(res.screen).not.toContain('Typed-secret-77');
      const login = await server.client.post('/edge/client/v1/authenticate?method=password', {
        body: { username: 'cli-updb-tty-login', password: 'Typed-secret-77' },
      });
      expect(login.status).toBe(200);
    });

    test('enroll an ottca JWT with --cert and --key of a verified 3rd-party CA; that certificate logs in', async () => {
      const thirdParty = await generateRootCa({ commonName: 'CLI third-party CA' });
      const created = await server.client.post(`${MGMT}/cas`, {
        headers: admin,
        body: {
          name: 'cli-ottca-ca',
          certPem: thirdParty.certPem,
          isAuthEnabled: true,
          isOttCaEnrollmentEnabled: true,
          isAutoCaEnrollmentEnabled: false,
          identityRoles: [],
        },
      });
      expect(created.status).toBe(201);
      const caId = created.body.data.id;
      const { verificationToken } = (await api.get(`/cas/${caId}`)).body.data;
      const proof = await issueClientCert(thirdParty, { commonName: verificationToken });
      const verified = await server.client.post(`${MGMT}/cas/${caId}/verify`, {
        headers: { ...admin, 'content-type': 'text/plain' },
        body: proof.certPem,
      });
      expect(verified.status).toBe(200);
      const jwtFile = join(home, 'cli-ottca-1.jwt');
      await svc(['edge', 'create', 'identity', 'device', 'cli-ottca-1', '--ottca', caId, '-o', jwtFile]);
      const device = await issueClientCert(thirdParty, { commonName: 'cli-ottca-1' });
      writeFileSync(join(home, 'ottca.cert.pem'), device.certPem);
      writeFileSync(join(home, 'ottca.key.pem'), device.keyPem);

      const res = await svc([
        'enroll',
        jwtFile,
        '--cert',
        'ottca.cert.pem',
        '--key',
        'ottca.key.pem',
        '--json',
      ]);

      expect(res).toMatchObject({ code: 0, stderr: '' });
      const detail = await detailByName('cli-ottca-1');
      expect(JSON.parse(res.stdout)).toMatchObject({ identityId: detail.id, method: 'ottca' });
      expect(detail.enrollment).toEqual({});
      expect(detail.authenticators.cert.fingerprint).toBe(certFingerprint(device.certPem));
      const login = await server
        .newClient({ cert: device.certPem, key: device.keyPem })
        .post('/edge/client/v1/authenticate?method=cert', { body: {} });
      expect(login.status).toBe(200);
      expect(login.body.data.identityId).toBe(detail.id);
    });

    test('an ottca JWT without --cert and --key is a usage error and the token stays unused', async () => {
      const jwtFile = join(home, 'cli-ott-flags.jwt');
      await svc(['edge', 'create', 'identity', 'device', 'cli-ott-flags', '-o', jwtFile]);

      const res = await svc(['enroll', jwtFile, '--cert', 'x.pem', '--key', 'x.key']);

      expect(res.code).toBe(2);
      expect(res.stderr).toBe('svc: --cert and --key are for ottca, this token is ott\n');
      expect(Object.keys((await detailByName('cli-ott-flags')).enrollment)).toEqual(['ott']);
    });

    test('a updb enrollment without a terminal and without --password-stdin is a usage error', async () => {
      const jwtFile = join(home, 'cli-updb-2.jwt');
      await svc([
        'edge',
        'create',
        'identity',
        'user',
        'cli-updb-2',
        '--updb',
        'cli-updb-2-login',
        '-o',
        jwtFile,
      ]);

      const res = await svc(['enroll', jwtFile]);

      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/^svc: .*--password-stdin/);
      const detail = await detailByName('cli-updb-2');
      expect(Object.keys(detail.enrollment)).toEqual(['updb']);
    });
  });
});
