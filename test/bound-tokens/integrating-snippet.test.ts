// The "Devices: tokens bound to the client certificate" snippet of docs/integrating.md, run as the
// page says (node, NODE_EXTRA_CA_CERTS, the device's certificate and key in device.crt and
// device.key) against a controller with the page's port put in. What it got is then checked,
// and the same tokens are tried without the certificate.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { refreshTokens } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import { enrolledDevice } from './bound-fixtures.js';

const root = resolve(process.cwd());
const FENCE = '`'.repeat(3);
const HEADING = '## Devices: tokens bound to the client certificate';

function snippet(): string {
  const markdown = readFileSync(join(root, 'docs', 'integrating.md'), 'utf8');
  const start = markdown.indexOf(`${HEADING}\n`);
  if (start < 0) throw new Error(`docs/integrating.md: no section "${HEADING}"`);
  const text = markdown.slice(start + HEADING.length).split(/^## /m)[0]!;
  const block = new RegExp(`^${FENCE}js\\n([\\s\\S]*?)^${FENCE}$`, 'm').exec(text)?.[1];
  if (!block) throw new Error(`docs/integrating.md: no js block under "${HEADING}"`);
  return block;
}

const afterSnippet = `
console.log(JSON.stringify({
  bound: config.serverMetadata().tls_client_certificate_bound_access_tokens,
  identity: identity.name,
  access_token: refreshed.access_token,
  refresh_token: refreshed.refresh_token,
  first: tokens.access_token,
}));
`;

describe('docs/integrating.md: a device gets certificate-bound tokens with openid-client', () => {
  let server: TestServer;
  const work = mkdtempSync(join(tmpdir(), 'svc-bound-snippet-'));
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('the snippet signs in with the certificate, calls the Edge API and refreshes; its tokens need the certificate', async () => {
    const api = managementApi(server, await server.adminToken());
    const device = await enrolledDevice(server, api, 'snippet-device');
    const host = new URL(server.url).host;
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
    writeFileSync(join(work, 'device.crt'), device.cert);
    writeFileSync(join(work, 'device.key'), device.key);
    writeFileSync(join(work, 'ca.pem'), server.ca);
    writeFileSync(join(work, 'device.mjs'), (snippet() + afterSnippet).replaceAll('localhost:1280', host));

    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>(
      (done) =>
        execFile(
          process.execPath,
          ['device.mjs'],
          {
            cwd: work,
            timeout: 60_000,
            env: { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: join(work, 'ca.pem') },
          },
          (err, out, errOut) =>
            done({ stdout: out, stderr: errOut, code: err ? ((err as { code?: number }).code ?? 1) : 0 }),
        ),
    );
    if (code !== 0) throw new Error(`the snippet failed (exit ${code}):\n${stderr}\n${stdout}`);
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, string | boolean>;

    expect(result).toMatchObject({ bound: true, identity: 'snippet-device' });
    for (const token of [result.first, result.access_token]) {
      expect(payloadOf(String(token)).cnf).toEqual({ 'x5t#S256': device.thumbprint });
    }
    const copied = await server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${String(result.access_token)}` },
    });
    const refreshed = await refreshTokens(server.client, String(result.refresh_token));
    expect(copied.status).toBe(401);
    expect([refreshed.status, refreshed.body.error]).toEqual([400, 'invalid_grant']);
  }, 120_000);
});
