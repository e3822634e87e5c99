import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { resumeCookieHeader, signCookie } from '../../src/oidc/resume-in-process.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { oidcPayloadsRepository } from '../../src/repositories/oidc-payloads-repository.js';
import { openPayload } from '../../src/oidc/stored-payload.js';

/**
 * The in-process resume (src/oidc/resume-in-process.ts) emulates what a browser would send back to
 * oidc-provider. These are the provider internals it relies on; an upgrade that changes any of
 * them must fail here, loudly, before it breaks logins (docs/adr/0005-in-process-cookie-less-resume.md).
 */
describe('contract: oidc-provider internals behind the in-process resume', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const entry = () =>
    server.app.services.oidc!.registry.pick(server.app.listeners[0]!.spec, new URL(server.url).host)!;

  test('oidc-provider is pinned to the exact version the resume was verified with', () => {
    const ours = JSON.parse(readFileSync('package.json', 'utf8'));
    const installed = JSON.parse(readFileSync('node_modules/oidc-provider/package.json', 'utf8'));

    expect(ours.dependencies['oidc-provider']).toBe('9.13.3');
    expect(installed.version).toBe('9.13.3');
  });

  test('the resume cookie is named _interaction_resume, scoped to /oidc/authorization/<uid>, keygrip-signed', async () => {
    const started = await startAuthorization(server.client);
    const uid = started.authRequestId;

    const cookies = started.response.headerAll('set-cookie');
    const resume = cookies.find((c) => c.startsWith(`_interaction_resume=${uid};`));
    const signature = cookies.find((c) => c.startsWith('_interaction_resume.sig='));

    expect(entry().resumeCookieName).toBe('_interaction_resume');
    expect(resume).toMatch(new RegExp(`path=/oidc/authorization/${uid};`, 'i'));
    expect(signature).toBeDefined();
    const sig = /^_interaction_resume\.sig=([^;]+);/.exec(signature!)![1];
    expect(sig).toBe(signCookie('_interaction_resume', uid, entry().cookieKey));
  });

  test('the provider derives the /oidc mount from originalUrl: the stored returnTo keeps the prefix', async () => {
    const started = await startAuthorization(server.client);

    const id = started.authRequestId;
    const row = await oidcPayloadsRepository.find(server.app.knex, 'Interaction', id, new Date());

    expect(openPayload(id, row!.payload).returnTo).toBe(
      `${server.url}/oidc/authorization/${started.authRequestId}`,
    );
  });

  test("an Interaction's getValueAndPayload is what its persist stores (the completed login hands it over)", async () => {
    const started = await startAuthorization(server.client);
    const id = started.authRequestId;
    const interaction = await entry().provider.Interaction.find(id);
    interaction!.result = { svc: { marker: 'contract' } };

    const { payload } = await (
      interaction as unknown as { getValueAndPayload(): Promise<{ payload: Record<string, unknown> }> }
    ).getValueAndPayload();
    await interaction!.persist();
    const row = await oidcPayloadsRepository.find(server.app.knex, 'Interaction', id, new Date());

    expect(payload).toEqual(openPayload(id, row!.payload));
  });

  test('the resume route needs that signed cookie: none or a bad signature is refused, ours is accepted', async () => {
    const started = await startAuthorization(server.client);
    const path = `/oidc/authorization/${started.authRequestId}`;
    const ours = resumeCookieHeader(entry(), started.authRequestId);

    const none = await server.client.get(path);
    const forged = await server.client.get(path, {
      headers: { cookie: `_interaction_resume=${started.authRequestId}; _interaction_resume.sig=forged` },
    });
    const accepted = await server.client.get(path, { headers: { cookie: ours } });

    expect(none.status).toBe(400);
    expect(none.body).toEqual({
      error: 'invalid_request',
      error_description: 'authorization request has expired',
    });
    expect(forged.status).toBe(400);
    // Accepted: the unfinished interaction is resumed, so the provider asks for a login again.
    expect(accepted.status).toBe(303);
    expect(accepted.header('location')).toMatch(/^\/oidc\/login\/username\?authRequestID=/);
  });
});
