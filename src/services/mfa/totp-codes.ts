import { generateSecret, verify } from 'otplib';

/** RFC 6238 as authenticator apps expect it: SHA-1, 6 digits, 30 s steps (otplib's defaults). */
export const TOTP_PERIOD_SECONDS = 30;

/** A 160-bit secret (RFC 4226 §4 recommends 160), base32 without padding: 32 characters. */
export const newTotpSecret = (): string => generateSecret({ length: 20 });

export const looksLikeTotpCode = (code: string): boolean => /^[0-9]{6}$/.test(code);

/**
 * The time step a code belongs to, within ±1 step of `at` (clock drift, RFC 6238 §6), and later
 * than `afterStep`; undefined when it matches none. Consuming the step is the caller's job.
 */
export async function matchTotpStep(
  secret: string,
  code: string,
  at: Date,
  afterStep: number,
): Promise<number | undefined> {
  if (!looksLikeTotpCode(code)) return undefined;
  const result = await verify({
    secret,
    token: code,
    epoch: Math.floor(at.getTime() / 1000),
    epochTolerance: TOTP_PERIOD_SECONDS,
    ...(afterStep > 0 ? { afterTimeStep: afterStep } : {}),
  });
  return result.valid && 'timeStep' in result ? result.timeStep : undefined;
}
