import type { Knex } from 'knex';
import type { SecretBox } from '../../crypto/secret-box.js';
import { inTransaction } from '../../db/transaction.js';
import {
  webhookOutboxRepository,
  type AttemptOutcome,
  type ClaimedDelivery,
} from '../../repositories/webhook-outbox-repository.js';
import type { AuditTrail } from '../audit-trail.js';
import type { OutboundPost } from './outbound-post.js';
import { webhookHeaders } from './webhook-signature.js';

const HOUR_MS = 3600_000;
/** A delivery is tried for this long after its event; then it has failed. */
const DELIVERY_WINDOW_MS = 24 * HOUR_MS;
/** A webhook whose every attempt has failed for this long is disabled. */
const DISABLE_AFTER_MS = 24 * HOUR_MS;
/** How long an attempt waits for the receiver's answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Longer than an attempt may take (its timeout), so that a lease never ends under a live send. */
export const DEFAULT_LEASE_MS = 60_000;
const FIRST_RETRY_MS = 5_000;
const MAX_RETRY_MS = HOUR_MS;

/**
 * The pause before the next attempt after `failures` failed ones: 5 s doubling per failure, at
 * most an hour, spread by ±25 % so that the deliveries of one outage do not come back together.
 */
function retryDelayMs(failures: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.75 + 0.5 * random()));
}

/**
 * Runs a single statement again when PostgreSQL ended it as a deadlock's victim (nothing of it was
 * written): an admin enabling a webhook locks the webhook, then its deliveries, while an
 * acknowledgement writes a delivery and then its webhook.
 */
async function retryDeadlocks<T>(statement: () => Promise<T>, retries = 3): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await statement();
    } catch (err) {
      if ((err as { code?: unknown }).code !== '40P01' || attempt >= retries) throw err;
    }
  }
}

export type DeliveryResult = 'delivered' | 'retrying' | 'failed' | 'lost';

export interface WebhookDelivery {
  /** Claims up to `limit` due deliveries for this instance. */
  claim(limit: number): Promise<ClaimedDelivery[]>;
  /** Sends one claimed delivery: no transaction or row lock is held meanwhile. */
  send(delivery: ClaimedDelivery): Promise<AttemptOutcome>;
  /**
   * Records the attempt (if this instance still holds the claim) and disables the webhook once
   * it has failed for 24 hours.
   */
  acknowledge(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<DeliveryResult>;
}

export interface WebhookDeliveryDeps {
  knex: Knex;
  box: SecretBox;
  post: OutboundPost;
  audit: AuditTrail;
  /** Who holds a claim: unique per process. */
  instance: string;
  leaseMs?: number;
  now: () => Date;
}

/** What a receiver answered, or why nothing came back. */
function outcomeOf(
  at: Date,
  started: number,
  result: { status: number; durationMs: number } | { error: Error },
  now: () => Date,
): Omit<AttemptOutcome, 'nextAttemptAt'> {
  if ('error' in result) {
    return {
      ok: false,
      at,
      statusCode: null,
      error: result.error.message.slice(0, 500),
      durationMs: now().getTime() - started,
    };
  }
  const ok = result.status >= 200 && result.status < 300;
  return {
    ok,
    at,
    statusCode: result.status,
    error: ok ? null : `the receiver answered ${result.status}`,
    durationMs: result.durationMs,
  };
}

/**
 * Delivery of the outbox's rows (docs/adr/0015-audit-events-and-webhooks.md): each claimed with a
 * lease in one statement, sent with nothing locked, acknowledged in one statement. An instance
 * that dies between claim and acknowledgement leaves the delivery to whoever claims it after the
 * lease: delivery is at least once.
 */
export function createWebhookDelivery({
  knex,
  box,
  post,
  audit,
  instance,
  leaseMs = DEFAULT_LEASE_MS,
  now,
}: WebhookDeliveryDeps): WebhookDelivery {
  /** Disables the webhook, with its audit event in the same transaction; one instance wins. */
  const disableFailing = (webhookId: string) =>
    inTransaction(knex, async (trx, afterCommit) => {
      const at = now();
      const disabled = await webhookOutboxRepository.disableFailing(
        trx,
        webhookId,
        new Date(at.getTime() - DISABLE_AFTER_MS),
        new Date(at.getTime() - DELIVERY_WINDOW_MS),
        at,
      );
      if (!disabled) return;
      await audit.store(trx, afterCommit, {
        event: 'webhook.disabled',
        webhookId: disabled.id,
        name: disabled.name,
        reason: 'failing',
        failingSince: disabled.failingSince.toISOString(),
      });
    });

  return {
    claim(limit) {
      return webhookOutboxRepository.claimDue(knex, { instance, leaseMs, now: now(), limit });
    },

    async send(delivery) {
      const at = now();
      const started = at.getTime();
      let result: Parameters<typeof outcomeOf>[2];
      try {
        // Opened at send time: the secrets stay sealed everywhere else.
        const secrets = [delivery.secretSealed, delivery.previousSecretSealed]
          .filter((s): s is string => s !== null)
          .map((s) => box.open(s));
        const headers = webhookHeaders({ id: delivery.id, body: delivery.payload, secrets }, at);
        result = await post(delivery.url, delivery.payload, headers);
      } catch (err) {
        result = { error: err instanceof Error ? err : new Error(String(err)) };
      }
      const outcome = outcomeOf(at, started, result, now);
      // The last retry comes when the window ends; failing then, the delivery has failed.
      const nextAttemptAt = new Date(
        Math.min(
          now().getTime() + retryDelayMs(delivery.attempts + 1),
          delivery.createdAt.getTime() + DELIVERY_WINDOW_MS,
        ),
      );
      return { ...outcome, nextAttemptAt };
    },

    async acknowledge(delivery, outcome) {
      const cutoff = new Date(now().getTime() - DELIVERY_WINDOW_MS);
      const acked = await retryDeadlocks(() =>
        webhookOutboxRepository.acknowledge(knex, delivery.id, instance, outcome, cutoff),
      );
      if (!acked) return 'lost';
      const { failingSince } = acked;
      if (failingSince && now().getTime() - failingSince.getTime() > DISABLE_AFTER_MS) {
        await disableFailing(delivery.webhookId);
      }
      if (acked.status === 'succeeded') return 'delivered';
      return acked.status === 'failed' ? 'failed' : 'retrying';
    },
  };
}
