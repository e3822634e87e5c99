import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import type { TestServer } from '../helpers/test-server.js';
import { CLIENT, type ManagementApi } from '../identities/identity-fixtures.js';

/** The master key of every test server (startTestServer): restores are opened with it. */
export const MASTER_KEY = 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=';
export const OTHER_KEY = Buffer.alloc(32, 7).toString('base64');
export const WRONG_KEY_LINE =
  'the master key cannot decrypt the secrets in this database: start every instance with the SVC_MASTER_KEY the database was created with';

/** An enrolled device: its identity, certificate bundle and key. */
export interface Device {
  identityId: string;
  certPem: string;
  keyPem: string;
}

/** What clients and an operator see of a deployment: its CA bundle, published key ids, identity names. */
export async function snapshot(server: TestServer, api: ManagementApi) {
  const ca = (await server.client.get('/.well-known/est/cacerts')).text;
  const kids = ((await server.client.get('/oidc/keys')).body.keys as { kid: string }[])
    .map((k) => k.kid)
    .sort();
  const names = ((await api.get('/identities?limit=100')).body.data as { name: string }[])
    .map((i) => i.name)
    .sort();
  return { ca, kids, names };
}

/** Redeems an ott enrollment with a new key pair; fails the test on anything but 200. */
export async function enrollOtt(
  server: TestServer,
  token: string,
  name: string,
): Promise<{ certPem: string; keyPem: string }> {
  const { csrPem, keyPem } = await generateClientKeyAndCsr({ commonName: name });
  const res = await server.client.post(`${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
  if (res.status !== 200) throw new Error(`ott enrollment failed: ${res.status} ${res.text}`);
  return { certPem: res.body.data.cert as string, keyPem };
}

export const certLogin = (server: TestServer, device: Device) =>
  server.newClient({ cert: device.certPem, key: device.keyPem }).post(`${CLIENT}/authenticate?method=cert`);

export const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
export const session = (token: string) => ({ headers: { 'svc-session': token } });

const run = promisify(execFile);

/** `npm run db:after-restore` as an operator runs it, configured by the environment alone. */
export async function afterRestoreScript(env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', join('scripts', 'db-after-restore.ts')],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'silent', ...env } },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
