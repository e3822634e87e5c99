import { randomBytes } from 'node:crypto';

/** The prefix Standard Webhooks gives a signing secret, before the base64 of its key. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/**
 * A new signing secret as Standard Webhooks writes it: `whsec_` and the base64 of 32 random bytes
 * (the HMAC-SHA256 key). Shown to the admin once and stored sealed, whole, prefix included.
 */
export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}
