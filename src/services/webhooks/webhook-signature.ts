import { createHmac } from 'node:crypto';
import { WEBHOOK_SECRET_PREFIX } from './webhook-secret.js';

/** Names the sender to receivers and their logs. */
export const WEBHOOK_USER_AGENT = 'svc-controller-webhooks/1';

/**
 * One Standard Webhooks signature (https://www.standardwebhooks.com, "Signature scheme"):
 * `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's key, the base64
 * after `whsec_`.
 */
function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(
    secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret,
    'base64',
  );
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
}

/**
 * The headers of one attempt: the delivery's id (the same on every attempt, so receivers can
 * deduplicate), this attempt's time in Unix seconds (so receivers that refuse old timestamps accept
 * a retry), and one signature per secret, space-separated: the current one first, then the
 * rotated-out one while it is still valid.
 */
export function webhookHeaders(
  o: { id: string; body: string; secrets: string[] },
  at: Date,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'webhook-id': o.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': o.secrets.map((s) => signWebhook(s, o.id, timestamp, o.body)).join(' '),
  };
}
