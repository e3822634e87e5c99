import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { AppError } from '../../src/errors/app-error.js';
import { deleteExpiredRows } from '../../src/services/janitor.js';
import type { AuditEvent, AuditTrail } from '../../src/services/audit-trail.js';
import { createPasskeyService, type PasskeyService } from '../../src/services/passkeys/passkey-service.js';
import type { WebauthnSite } from '../../src/services/passkeys/webauthn-settings.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';
import { createSoftAuthenticator, type SoftAuthenticator } from '../helpers/soft-authenticator.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

const ORIGIN = 'https://localhost:1280';
const SITE: WebauthnSite = { rpId: 'localhost', origins: [ORIGIN] };

/** The error code a rejected promise carries (or 'resolved'). */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof AppError ? e.code : `not an AppError: ${String(e)}`),
  );

describe('the passkey service (registration and the assertions the login relies on)', () => {
  let server: TestServer;
  let passkeys: PasskeyService;
  let clock: Date;
  const events: AuditEvent[] = [];
  const audit: AuditTrail = {
    record: (e) => void events.push(e),
    store: async (_trx, afterCommit, e) => afterCommit(() => void events.push(e)),
    storeAlone: async (e) => void events.push(e),
    storeAttempt: async (e) => void events.push(e),
    hold: async (e) => void events.push(e),
    takeHeld: () => ({ rows: [], logged: () => undefined }),
    storeHeld: async () => undefined,
    subscribe: () => () => undefined,
  };

  beforeAll(async () => {
    server = await startTestServer();
    passkeys = createPasskeyService({ knex: server.app.knex, rpName: 'svc', audit, now: () => clock });
  });
  afterAll(() => server.close());

  /** A user with one passkey on a fresh soft authenticator. */
  async function withPasskey(name: string, zeroCounter = false) {
    clock = new Date();
    const user = await createUser(server, name);
    const authenticator = createSoftAuthenticator({ origin: ORIGIN, rpId: 'localhost' });
    const ceremony = { boundTo: `session-${name}` };
    const { options } = await passkeys.registrationOptions(user, ceremony, SITE);
    const response = await authenticator.register(options as never, { zeroCounter });
    const created = await passkeys.register(user.id, ceremony, SITE, { name: 'laptop', response });
    return { user, authenticator, passkeyId: created.id };
  }

  async function secondFactor(
    user: TestUser,
    a: SoftAuthenticator,
    boundTo = 'auth-request-1',
    overrides = {},
  ) {
    const p = { purpose: 'second-factor' as const, identityId: user.id };
    const options = await passkeys.assertionOptions(p, { boundTo }, SITE);
    const response = await a.assert(options as never, overrides);
    return passkeys.verifyAssertion(p, { boundTo }, SITE, response);
  }

  test('a registered passkey passes as a second factor, and its use is recorded', async () => {
    const { user, authenticator, passkeyId } = await withPasskey('svc-pk-2fa');

    const result = await secondFactor(user, authenticator);

    expect(result).toEqual({ identityId: user.id, passkeyId, userVerified: true });
    const [listed] = await passkeys.list(user.id);
    expect(listed?.lastUsedAt).not.toBeNull();
    expect(events).toContainEqual(
      expect.objectContaining({ event: 'passkey.registered', identityId: user.id }),
    );
  });

  test('second-factor options allow only the identity’s passkeys and prefer user verification', async () => {
    const { user, authenticator } = await withPasskey('svc-pk-options');

    const options = await passkeys.assertionOptions(
      { purpose: 'second-factor', identityId: user.id },
      { boundTo: 'x' },
      SITE,
    );
    const passwordless = await passkeys.assertionOptions({ purpose: 'passwordless' }, { boundTo: 'y' }, SITE);

    expect(options.allowCredentials?.map((c) => c.id)).toEqual([
      authenticator.credentials[0]!.id.toString('base64url'),
    ]);
    expect(options.userVerification).toBe('preferred');
    expect(passwordless.allowCredentials ?? []).toEqual([]);
    expect(passwordless.userVerification).toBe('required');
  });

  test('a passwordless assertion names the passkey’s owner; without user verification it is refused', async () => {
    const { user, authenticator, passkeyId } = await withPasskey('svc-pk-passwordless');
    const p = { purpose: 'passwordless' as const };

    const options = await passkeys.assertionOptions(p, { boundTo: 'login-a' }, SITE);
    const result = await passkeys.verifyAssertion(
      p,
      { boundTo: 'login-a' },
      SITE,
      await authenticator.assert(options as never),
    );
    const again = await passkeys.assertionOptions(p, { boundTo: 'login-b' }, SITE);
    const unverified = await codeOf(
      passkeys.verifyAssertion(
        p,
        { boundTo: 'login-b' },
        SITE,
        await authenticator.assert(again as never, { userVerified: false }),
      ),
    );

    expect(result).toEqual({ identityId: user.id, passkeyId, userVerified: true });
    expect(unverified).toBe('INVALID_AUTH');
  });

  test('another identity’s credential is refused as a second factor', async () => {
    const alice = await withPasskey('svc-pk-alice');
    const bob = await withPasskey('svc-pk-bob');
    const p = { purpose: 'second-factor' as const, identityId: alice.user.id };

    const options = await passkeys.assertionOptions(p, { boundTo: 'mixed' }, SITE);
    // Bob's authenticator answers Alice's ceremony with Bob's own credential.
    const response = await bob.authenticator.assert({ ...options, allowCredentials: [] } as never);
    const result = await codeOf(passkeys.verifyAssertion(p, { boundTo: 'mixed' }, SITE, response));

    expect(result).toBe('INVALID_AUTH');
  });

  test('a challenge is used once, only by its own ceremony, and not after 5 minutes', async () => {
    const { user, authenticator } = await withPasskey('svc-pk-challenge');
    const p = { purpose: 'second-factor' as const, identityId: user.id };

    const options = await passkeys.assertionOptions(p, { boundTo: 'one' }, SITE);
    const response = await authenticator.assert(options as never);
    const elsewhere = await codeOf(passkeys.verifyAssertion(p, { boundTo: 'two' }, SITE, response));
    const first = await codeOf(passkeys.verifyAssertion(p, { boundTo: 'one' }, SITE, response));
    const replay = await codeOf(passkeys.verifyAssertion(p, { boundTo: 'one' }, SITE, response));

    const late = await passkeys.assertionOptions(p, { boundTo: 'late' }, SITE);
    const lateResponse = await authenticator.assert(late as never);
    clock = new Date(clock.getTime() + 5 * 60_000 + 1000);
    const expired = await codeOf(passkeys.verifyAssertion(p, { boundTo: 'late' }, SITE, lateResponse));

    // The ceremony of another binding does not consume it: the right one still succeeds.
    expect(elsewhere).toBe('INVALID_AUTH');
    expect(first).toBe('resolved');
    expect(replay).toBe('INVALID_AUTH');
    expect(expired).toBe('INVALID_AUTH');
  });

  test('the janitor removes challenges that expired unanswered, and only those', async () => {
    clock = new Date();
    const user = await createUser(server, 'svc-pk-janitor');
    const p = { purpose: 'second-factor' as const, identityId: user.id };
    const old = await passkeys.assertionOptions(p, { boundTo: 'janitor-old' }, SITE);
    clock = new Date(clock.getTime() + 4 * 60_000);
    const fresh = await passkeys.assertionOptions(p, { boundTo: 'janitor-fresh' }, SITE);

    const removed = await deleteExpiredRows(server.app.knex, new Date(clock.getTime() + 2 * 60_000));

    const left = await server.app
      .knex('webauthn_challenges')
      .whereIn('challenge', [old.challenge, fresh.challenge]);
    expect(removed.webauthnChallenges).toBeGreaterThanOrEqual(1);
    expect(left.map((r: { challenge: string }) => r.challenge)).toEqual([fresh.challenge]);
  });

  test('a counter that does not grow is refused and audited as a suspected clone', async () => {
    const { user, authenticator, passkeyId } = await withPasskey('svc-pk-clone');
    const copy = authenticator.clone();

    const original = await codeOf(secondFactor(user, authenticator, 'c1'));
    // The copy still holds the counter value from before the original's use.
    const cloned = await codeOf(secondFactor(user, copy, 'c2'));
    const lower = await codeOf(secondFactor(user, authenticator, 'c3', { signCount: 1 }));

    expect(original).toBe('resolved');
    expect(cloned).toBe('INVALID_AUTH');
    expect(lower).toBe('INVALID_AUTH');
    expect(events).toContainEqual(
      expect.objectContaining({ event: 'passkey.clone-suspected', identityId: user.id, passkeyId }),
    );
  });

  test('an authenticator that keeps no counter (always 0) is accepted each time', async () => {
    const { user, authenticator } = await withPasskey('svc-pk-zero', true);

    const first = await codeOf(secondFactor(user, authenticator, 'z1'));
    const second = await codeOf(secondFactor(user, authenticator, 'z2'));

    expect([first, second]).toEqual(['resolved', 'resolved']);
  });

  test('wrong origin, wrong rpId and a wrong ceremony type are refused', async () => {
    const { user, authenticator } = await withPasskey('svc-pk-origin');

    const origin = await codeOf(secondFactor(user, authenticator, 'o1', { origin: 'https://evil.example' }));
    const rpId = await codeOf(secondFactor(user, authenticator, 'o2', { rpId: 'evil.example' }));
    const type = await codeOf(secondFactor(user, authenticator, 'o3', { type: 'webauthn.create' }));
    const good = await codeOf(secondFactor(user, authenticator, 'o4'));

    expect([origin, rpId, type, good]).toEqual(['INVALID_AUTH', 'INVALID_AUTH', 'INVALID_AUTH', 'resolved']);
  });

  test('garbage is 401 INVALID_AUTH, never an unexpected error', async () => {
    const { user, authenticator } = await withPasskey('svc-pk-garbage');
    const p = { purpose: 'second-factor' as const, identityId: user.id };
    const options = await passkeys.assertionOptions(p, { boundTo: 'g' }, SITE);
    const good = (await authenticator.assert(options as never)) as Record<string, any>;
    const inputs: unknown[] = [
      null,
      'text',
      42,
      [],
      {},
      { ...good, id: 7 },
      { ...good, response: { ...good.response, clientDataJSON: '!!!' } },
      {
        ...good,
        response: { ...good.response, clientDataJSON: Buffer.from('not json').toString('base64url') },
      },
      { ...good, response: { ...good.response, clientDataJSON: 'A'.repeat(100_000) } },
      { ...good, response: { ...good.response, authenticatorData: 'AAAA' } },
      { ...good, response: { ...good.response, signature: 'AAAA' } },
      { ...good, response: { ...good.response, userHandle: 5 } },
      { ...good, type: 'password' },
    ];

    const results = [];
    for (const input of inputs)
      results.push(await codeOf(passkeys.verifyAssertion(p, { boundTo: 'g' }, SITE, input)));

    expect(results).toEqual(inputs.map(() => 'INVALID_AUTH'));
  });
});
