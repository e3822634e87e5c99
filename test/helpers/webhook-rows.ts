import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { newId } from '../../src/crypto/random.js';

/** The master key the test servers and controller processes run with (test-server.ts, spawn-controller.ts). */
const TEST_MASTER_KEY = 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=';

/** A SecretBox with the test servers' master key: seals as they do. */
export const testSecretBox = () => createSecretBox(Buffer.from(TEST_MASTER_KEY, 'base64'));

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export interface WebhookRowOptions {
  name: string;
  url: string;
  events?: string[];
  secret?: string;
  previousSecret?: string;
  previousSecretExpiresAt?: Date;
  enabled?: boolean;
  disabledReason?: string;
}

/** A webhook inserted as a row (secrets sealed), as the management API would create it. */
export async function insertWebhook(
  knex: Knex,
  o: WebhookRowOptions,
): Promise<{ id: string; secret: string }> {
  const box = testSecretBox();
  const id = newId();
  const secret = o.secret ?? newWebhookSecret();
  const now = new Date();
  await knex('webhooks').insert({
    id,
    name: o.name,
    url: o.url,
    events: JSON.stringify(o.events ?? ['*']),
    enabled: o.enabled ?? true,
    secret_sealed: box.seal(secret),
    previous_secret_sealed: o.previousSecret === undefined ? null : box.seal(o.previousSecret),
    previous_secret_expires_at: o.previousSecretExpiresAt ?? null,
    disabled_reason: o.disabledReason ?? null,
    created_at: now,
    updated_at: now,
  });
  return { id, secret };
}

/**
 * Waits until the fan-out has passed every event stored so far, so that a webhook inserted next
 * gets only the events that come after it.
 */
export async function fanoutCaughtUp(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw(
    `SELECT NOT EXISTS (
       SELECT 1 FROM audit_events e, webhook_dispatch d
       WHERE d.id = 1 AND (e.tx, e.id) > (d.last_tx, d.last_event_id)
     ) AS done`,
  );
  return rows[0].done === true;
}
