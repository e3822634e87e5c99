import { describe, expect, test } from '@jest/globals';
import { AppError } from '../../errors/app-error.js';
import { createWebauthnSettings } from './webauthn-settings.js';

const refusal = (f: () => unknown) => {
  try {
    f();
    return 'accepted';
  } catch (err) {
    return err instanceof AppError ? `${err.code}: ${err.message}` : String(err);
  }
};

describe('the WebAuthn site of a deployment', () => {
  test('the quickstart: rpId localhost, its bind points as origins, never the IP address', () => {
    const s = createWebauthnSettings({ addresses: ['localhost:1280', '127.0.0.1:1280'], trustedTls: false });

    expect(s.site).toEqual({ rpId: 'localhost', origins: ['https://localhost:1280'] });
    expect(s.siteFor('localhost:1280')).toBe(s.site);
    expect(refusal(() => s.siteFor('127.0.0.1:1280'))).toMatch(/^PASSKEYS_UNAVAILABLE: .*webauthn\.rpId/);
    expect(refusal(() => s.siteFor('[::1]:1280'))).toMatch(/^PASSKEYS_UNAVAILABLE/);
  });

  test('the first named bind point decides; names under it are origins, :443 is left out', () => {
    const s = createWebauthnSettings({
      addresses: ['10.0.0.1:1280', 'example.com:443', 'login.example.com:1281', 'other.org:1282'],
      trustedTls: true,
    });

    expect(s.site).toEqual({
      rpId: 'example.com',
      origins: ['https://example.com', 'https://login.example.com:1281'],
    });
    expect(refusal(() => s.siteFor('login.example.com:1281'))).toBe('accepted');
    expect(refusal(() => s.siteFor('other.org:1282'))).toMatch(/^PASSKEYS_UNAVAILABLE: .*other\.org/);
  });

  test('outside localhost the generated certificate is not enough: tls.cert is named', () => {
    const s = createWebauthnSettings({ addresses: ['ctrl.example.com:1280'], trustedTls: false });

    expect(refusal(() => s.siteFor('ctrl.example.com:1280'))).toMatch(/^PASSKEYS_UNAVAILABLE: .*tls\.cert/);
  });

  test('configured rpId and origins replace the derived ones', () => {
    const s = createWebauthnSettings({
      rpId: 'Example.COM',
      origins: ['https://app.example.com'],
      addresses: ['localhost:1280'],
      trustedTls: true,
    });

    expect(s.site).toEqual({ rpId: 'example.com', origins: ['https://app.example.com'] });
    expect(refusal(() => s.siteFor('localhost:1280'))).toMatch(/^PASSKEYS_UNAVAILABLE/);
  });

  test('a Host that is not one of the origins is refused naming webauthn.origins', () => {
    const s = createWebauthnSettings({
      rpId: 'example.com',
      origins: ['https://login.example.com'],
      addresses: ['login.example.com:1280'],
      trustedTls: true,
    });

    expect(s.isAvailable('login.example.com')).toBe(true);
    expect(s.isAvailable('login.example.com:443')).toBe(true);
    expect(s.unavailableReason('login.example.com:1280')).toMatch(
      /^https:\/\/login\.example\.com:1280 is not one of the passkey origins .*webauthn\.origins/,
    );
    expect(refusal(() => s.siteFor('other.example.com'))).toMatch(
      /^PASSKEYS_UNAVAILABLE: .*webauthn\.origins/,
    );
  });

  test('an origin outside the derived rpId stops the start, naming webauthn.origins', () => {
    expect(() =>
      createWebauthnSettings({
        origins: ['https://evil.org'],
        addresses: ['localhost:1280'],
        trustedTls: false,
      }),
    ).toThrow(/^webauthn\.origins \(SVC_WEBAUTHN_ORIGINS\): https:\/\/evil\.org is not localhost/);
  });
});
