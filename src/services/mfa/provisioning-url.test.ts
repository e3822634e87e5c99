import { describe, expect, test } from '@jest/globals';
import { provisioningUrl } from './provisioning-url.js';
import { newRecoveryCode, normalizeRecoveryCode } from './recovery-codes.js';

describe('provisioning URL and recovery code formats', () => {
  test('the label is issuer:name with both halves percent-encoded, then issuer and secret', () => {
    const url = provisioningUrl('Acme Corp', 'bob:smith@example.com', 'JBSWY3DPEHPK3PXP');

    expect(url).toBe(
      'otpauth://totp/Acme%20Corp:bob%3Asmith%40example.com?issuer=Acme%20Corp&secret=JBSWY3DPEHPK3PXP',
    );
    expect(new URL(url).searchParams.get('issuer')).toBe('Acme Corp');
  });

  test('recovery codes are 12 base32 characters and are accepted as users type them', () => {
    const code = newRecoveryCode();

    expect(code).toMatch(/^[A-Z2-7]{12}$/);
    expect(normalizeRecoveryCode(` ${code.slice(0, 6).toLowerCase()}-${code.slice(6)} `)).toBe(code);
    expect(normalizeRecoveryCode('123456')).toBeUndefined();
    expect(normalizeRecoveryCode('ABCDEFGHIJK1')).toBeUndefined();
  });
});
