import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { SecretBox } from '../../crypto/secret-box.js';
import type { ClaimedDelivery } from '../../repositories/webhook-outbox-repository.js';
import type { AuditTrail } from '../audit-trail.js';
import { outsideRequestScope } from '../request-scope.js';
import type { OutboundPost } from './outbound-post.js';
import { createWebhookDelivery, DEFAULT_LEASE_MS, type DeliveryResult } from './webhook-delivery.js';
import { createWebhookFanout } from './webhook-fanout.js';

const EVERY_MS = 1_000;
/** Sends in flight per instance. */
const CONCURRENCY = 4;
/** Events recorded close together are fanned out together. */
const NUDGE_DELAY_MS = 20;

export interface WebhookDispatcherDeps {
  knex: Knex;
  box: SecretBox;
  post: OutboundPost;
  audit: AuditTrail;
  logger: Logger;
  /** How long a claim lasts; shortened only by tests that kill an instance mid-delivery. */
  leaseMs?: number;
  now?: () => Date;
  /** Told each attempt's result (metrics). */
  onResult?: (result: DeliveryResult) => void;
  everyMs?: number;
  concurrency?: number;
}

/**
 * What tests replace: the outbound POST, the lease, the clock; `deliver: false` runs no delivery
 * at all, for tests that write outbox rows themselves and read them back.
 */
export type WebhookOverrides = Partial<Pick<WebhookDispatcherDeps, 'post' | 'leaseMs' | 'now'>> & {
  deliver?: boolean;
};

/**
 * The lease a test sets for a controller process it kills mid-delivery
 * (`SVC_TEST_WEBHOOK_LEASE_MS`): a test hook, not a setting.
 */
export function webhookOverridesFromEnv(env: NodeJS.ProcessEnv): WebhookOverrides {
  const leaseMs = Number(env.SVC_TEST_WEBHOOK_LEASE_MS);
  return Number.isInteger(leaseMs) && leaseMs > 0 ? { leaseMs } : {};
}

/** Names this process in claims and attempts, as the lease locks name their holder. */
const newInstanceId = () => `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;

/**
 * Runs webhook delivery in this process: every second, and soon after this process records an
 * audit event, the fan-out moves new events into the outbox, and due deliveries are claimed and
 * sent, a few at a time. Every instance runs it; the fan-out's conditional write and the claims'
 * leases keep them from doing the same work twice. The returned stop waits for the statements in progress, not
 * for sends: a send still in flight is not acknowledged, and its delivery is tried again once its
 * lease ends (at least once).
 */
export function startWebhookDispatcher(deps: WebhookDispatcherDeps): () => Promise<void> {
  const { knex, audit, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const concurrency = deps.concurrency ?? CONCURRENCY;
  const instance = newInstanceId();
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const fanout = createWebhookFanout({ knex, now });
  const delivery = createWebhookDelivery({ ...deps, instance, leaseMs, now });
  const log = logger.child({ webhooks: instance });

  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  let failing = false;
  let sending = 0;
  /** Acknowledgements under way: stop waits for them, so the pool never closes under one. */
  const acks = new Set<Promise<unknown>>();

  async function deliver(claimed: ClaimedDelivery): Promise<void> {
    const outcome = await delivery.send(claimed);
    if (stopped) return;
    const ack = delivery.acknowledge(claimed, outcome);
    acks.add(ack);
    try {
      const result = await ack;
      deps.onResult?.(result);
      if (result === 'failed') {
        log.warn(
          { deliveryId: claimed.id, webhookId: claimed.webhookId },
          'webhook delivery failed for 24 hours: given up',
        );
      }
    } finally {
      acks.delete(ack);
    }
  }

  async function pass(): Promise<void> {
    do {
      again = false;
      await fanout.run();
      const free = concurrency - sending;
      if (free <= 0 || stopped) continue;
      for (const claimed of await delivery.claim(free)) {
        sending++;
        void deliver(claimed)
          .catch((err: unknown) => log.warn({ err, deliveryId: claimed.id }, 'webhook delivery failed'))
          .finally(() => {
            sending--;
            // A free slot may take the next due delivery at once.
            tick();
          });
      }
    } while (again && !stopped);
  }

  function tick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .then(
        () => {
          if (failing) log.info('webhook dispatch works again');
          failing = false;
        },
        (err: unknown) => {
          // Once per run of failures: an unreachable database would otherwise log every second.
          if (!failing) log.warn({ err }, 'webhook dispatch failed; retrying every second');
          failing = true;
        },
      )
      .finally(() => (running = undefined));
  }

  let nudged: NodeJS.Timeout | undefined;
  // Called after a request's commit: the pass it starts belongs to no request, so that the
  // events it stores and the lines it logs name none.
  const unsubscribe = audit.subscribe(() => {
    if (nudged) return;
    nudged = outsideRequestScope(() =>
      setTimeout(() => {
        nudged = undefined;
        tick();
      }, NUDGE_DELAY_MS),
    );
    nudged.unref();
  });
  const timer = setInterval(tick, deps.everyMs ?? EVERY_MS);
  timer.unref();

  return async () => {
    stopped = true;
    clearInterval(timer);
    clearTimeout(nudged);
    unsubscribe();
    await running;
    await Promise.allSettled([...acks]);
  };
}
