import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { resolveMasterKey } from '../../src/crypto/master-key.js';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { AppError } from '../../src/errors/app-error.js';
import { createTotpService, type TotpService } from '../../src/services/mfa/totp-service.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { createUser } from './mfa-fixtures.js';

/** The error code a rejected promise carries (or 'resolved'). */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof AppError ? e.code : String(e)),
  );

describe('the TOTP service API (used by the OIDC login steps)', () => {
  let server: TestServer;
  let totp: TotpService;
  let clock: Date;
  let realClockTotp: TotpService;
  beforeAll(async () => {
    server = await startTestServer();
    realClockTotp = server.app.services.totp;
    // A second instance of the same deployment (same database, same master key) with a test clock.
    const box = createSecretBox(resolveMasterKey(server.app.config.masterKey, server.dataDir).key);
    totp = createTotpService({ knex: server.app.knex, box, issuer: 'svc', now: () => clock });
  });
  afterAll(() => server.close());

  async function enrolled(name: string) {
    clock = new Date();
    const user = await createUser(server, name);
    const start = await totp.startEnrollment(user.id, user.name);
    const step = timeStepAt(clock);
    await totp.verifyEnrollment(user.id, await totpCode(start.provisioningUrl, step));
    return { user, url: start.provisioningUrl, codes: start.recoveryCodes, step };
  }

  test('enrollment moves through its states (none, unverified, verified) and status follows', async () => {
    clock = new Date();
    const user = await createUser(server, 'svc states');
    const before = await totp.status(user.id);
    const start = await totp.startEnrollment(user.id, user.name);
    const during = await totp.status(user.id);
    const second = await codeOf(totp.startEnrollment(user.id, user.name));
    await totp.abandonEnrollment(user.id);
    const abandoned = await totp.status(user.id);
    const restart = await totp.startEnrollment(user.id, user.name);
    await totp.verifyEnrollment(user.id, await totpCode(restart.provisioningUrl, timeStepAt(clock)));

    expect(before).toEqual({ enrolled: false, verified: false });
    expect(start.isVerified).toBe(false);
    expect(during).toEqual({ enrolled: true, verified: false });
    expect(second).toBe('MFA_EXISTS');
    expect(abandoned).toEqual({ enrolled: false, verified: false });
    expect(await totp.status(user.id)).toEqual({ enrolled: true, verified: true });
    expect(await totp.provisioningUrlFor(user.id)).toBeUndefined();
    expect(await codeOf(totp.abandonEnrollment(user.id))).toBe('NOT_FOUND');
    expect(await codeOf(totp.startEnrollment(user.id, user.name))).toBe('MFA_EXISTS');
    expect(await totp.status(user.id)).toEqual({ enrolled: true, verified: true });
  });

  test('an unverified enrollment never satisfies a login code', async () => {
    clock = new Date();
    const user = await createUser(server, 'svc unverified');
    const start = await totp.startEnrollment(user.id, user.name);

    const result = await codeOf(
      totp.verifyLoginCode(user.id, await totpCode(start.provisioningUrl, timeStepAt(clock)), {
        invalidCode: 'INVALID_TOTP_CODE',
      }),
    );
    const recovery = await codeOf(totp.verifyLoginCode(user.id, start.recoveryCodes[0]!));

    expect(result).toBe('INVALID_TOTP_CODE');
    expect(recovery).toBe('MFA_INVALID_TOKEN');
    expect(await totp.provisioningUrlFor(user.id)).toBe(start.provisioningUrl);
  });

  test('verifyLoginCode tells a TOTP code from a recovery code and honours its options', async () => {
    const { user, url, codes, step } = await enrolled('svc kinds');

    const kindTotp = await totp.verifyLoginCode(user.id, await totpCode(url, step + 1));
    const kindRecovery = await totp.verifyLoginCode(user.id, codes[0]!);
    const noRecovery = await codeOf(
      totp.verifyLoginCode(user.id, codes[1]!, { allowRecovery: false, invalidCode: 'INVALID_TOTP_CODE' }),
    );

    expect(kindTotp).toBe('totp');
    expect(kindRecovery).toBe('recovery');
    expect(noRecovery).toBe('INVALID_TOTP_CODE');
    expect(await totp.remainingRecoveryCodes(user.id)).toBe(9);
  });

  test('ten parallel uses of one code succeed once, for a TOTP code and for a recovery code', async () => {
    // Two identities: ten parallel attempts on one would also meet its failure limit.
    const a = await enrolled('svc parallel totp');
    const b = await enrolled('svc parallel recovery');
    const code = await totpCode(a.url, a.step + 1);

    const [totpResults, recoveryResults] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => codeOf(totp.verifyLoginCode(a.user.id, code)))),
      Promise.all(Array.from({ length: 10 }, () => codeOf(totp.verifyLoginCode(b.user.id, b.codes[2]!)))),
    ]);

    expect(totpResults.filter((r) => r === 'resolved')).toHaveLength(1);
    expect(recoveryResults.filter((r) => r === 'resolved')).toHaveLength(1);
  });

  test('five failures lock the identity for 15 minutes from the first, then codes work again', async () => {
    const { user, url, step } = await enrolled('svc window');
    const t0 = clock;
    const wrong = await totpCode(url, step + 10);

    for (let i = 0; i < 5; i++)
      expect(await codeOf(totp.verifyLoginCode(user.id, wrong))).toBe('MFA_INVALID_TOKEN');
    const limited = await totp
      .verifyLoginCode(user.id, await totpCode(url, step + 1))
      .catch((e: AppError) => e);
    clock = new Date(t0.getTime() + 14 * 60_000);
    const later = await totp
      .verifyLoginCode(user.id, await totpCode(url, timeStepAt(clock)))
      .catch((e: AppError) => e);
    clock = new Date(t0.getTime() + 15 * 60_000 + 1000);
    const afterWindow = await totp.verifyLoginCode(user.id, await totpCode(url, timeStepAt(clock)));

    expect(limited).toBeInstanceOf(AppError);
    expect((limited as AppError).code).toBe('RATE_LIMITED');
    expect((limited as AppError).headers['Retry-After']).toBe('900');
    expect((later as AppError).code).toBe('RATE_LIMITED');
    expect((later as AppError).headers['Retry-After']).toBe('60');
    expect(afterWindow).toBe('totp');
  });

  test('only failed codes count towards the limit', async () => {
    const { user, url, step } = await enrolled('svc only failures');
    const wrong = await totpCode(url, step + 10);

    for (let i = 0; i < 4; i++) await codeOf(totp.verifyLoginCode(user.id, wrong));
    const success = await totp.verifyLoginCode(user.id, await totpCode(url, step + 1));
    const fifthFailure = await codeOf(totp.verifyLoginCode(user.id, wrong));
    const sixth = await codeOf(totp.verifyLoginCode(user.id, wrong));

    expect(success).toBe('totp');
    expect(fifthFailure).toBe('MFA_INVALID_TOKEN');
    expect(sixth).toBe('RATE_LIMITED');
  });

  test('remove needs a valid code for a verified configuration; an unknown identity cannot enroll', async () => {
    const { user, url, step } = await enrolled('svc remove');

    const withoutCode = await codeOf(totp.remove(user.id));
    await totp.remove(user.id, await totpCode(url, step + 1));

    expect(withoutCode).toBe('MFA_INVALID_TOKEN');
    expect(await totp.status(user.id)).toEqual({ enrolled: false, verified: false });
    expect(await codeOf(totp.remove(user.id))).toBe('NOT_FOUND');
    expect(await codeOf(totp.startEnrollment('no-such-identity', 'ghost'))).toBe('NOT_FOUND');
    expect(await codeOf(realClockTotp.remainingRecoveryCodes(user.id))).toBe('NOT_FOUND');
  });
});
