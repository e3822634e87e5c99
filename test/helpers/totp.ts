import { generate } from 'otplib';

/** What an authenticator app does with a provisioning URL, for tests (RFC 6238, SHA-1, 6 digits, 30 s). */
export const TOTP_PERIOD = 30;

/** The base32 secret of an `otpauth://totp/…?secret=…` URL. */
export function secretFromUrl(provisioningUrl: string): string {
  const secret = new URL(provisioningUrl).searchParams.get('secret');
  if (!secret) throw new Error(`no secret in ${provisioningUrl}`);
  return secret;
}

/** The RFC 6238 time step of a moment (default now). */
export const timeStepAt = (at: Date = new Date()): number => Math.floor(at.getTime() / 1000 / TOTP_PERIOD);

/**
 * The code for a time step (default: the current one). Take the step once with `timeStepAt()` and
 * derive `step + 1` from it, so a test does not depend on where in the 30 s window it runs: the
 * server accepts ±1 step.
 */
export function totpCode(secretOrUrl: string, step: number = timeStepAt()): Promise<string> {
  const secret = secretOrUrl.startsWith('otpauth:') ? secretFromUrl(secretOrUrl) : secretOrUrl;
  return generate({ secret, epoch: step * TOTP_PERIOD });
}
