import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { ifInstanceLockFree, type InstanceLock } from '../db/instance-lock.js';
import { accountSessionsRepository } from '../repositories/account-sessions-repository.js';
import { auditRetentionRepository } from '../repositories/audit-retention-repository.js';
import { apiSessionsRepository } from '../repositories/api-sessions-repository.js';
import { revocationsRepository } from '../repositories/revocations-repository.js';
import { loginFailuresRepository } from '../repositories/login-failures-repository.js';
import { mfaTotpFailuresRepository } from '../repositories/mfa-totp-failures-repository.js';
import { webauthnChallengesRepository } from '../repositories/webauthn-challenges-repository.js';
import { TOTP_FAILURE_WINDOW_MS } from './mfa/second-factor-attempts.js';

const EVERY_MS = 60_000;
/** Rows per DELETE: short statements, no long locks. */
export const JANITOR_BATCH = 5_000;
/** Batches per table and pass: up to 500,000 rows a minute per table, and a pass still ends. */
export const JANITOR_MAX_BATCHES = 100;

const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Deletes batch after batch until one comes back short, so a pass empties the table of expired
 * rows however fast anonymous clients create them; bounded, yielding between batches, and ending
 * early once `signal` is aborted (the process is stopping).
 */
export async function drainExpired(
  deleteBatch: (limit: number) => Promise<number>,
  signal?: AbortSignal,
): Promise<number> {
  let total = 0;
  for (let i = 0; i < JANITOR_MAX_BATCHES && !signal?.aborted; i++) {
    const n = await deleteBatch(JANITOR_BATCH);
    total += n;
    if (n < JANITOR_BATCH) break;
    await yieldToRequests();
  }
  return total;
}

/**
 * One pass, by one instance at a time: `{ ran: false }` when another instance holds the lock (it
 * is doing the same work, so this one skips until the next minute).
 */
export function janitorPass<T>(lock: InstanceLock, pass: () => Promise<T>) {
  return ifInstanceLockFree(lock, pass);
}

/**
 * Runs `pass` every minute under `lock`, never two at once; a failure is logged and the next
 * minute retries. The returned stop ends a pass in progress after its current batch and resolves
 * once it has ended, so that the pool is never closed under a running pass.
 */
export function runJanitor(
  pass: (signal: AbortSignal) => Promise<unknown>,
  lock: InstanceLock,
  logger: Logger,
  what: string,
  everyMs = EVERY_MS,
): () => Promise<void> {
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = janitorPass(lock, () => pass(stopping.signal))
      .then(
        () => undefined,
        (err: unknown) => void logger.warn({ err }, `clean-up of ${what} failed`),
      )
      .finally(() => (running = undefined));
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    stopping.abort();
    await running;
  };
}

/** Webhook deliveries (and their attempts) are kept 30 days, whatever their state. */
const WEBHOOK_DELIVERY_RETENTION_MS = 30 * 86_400_000;

/**
 * Deletes expired API sessions, revocations, ended failure windows, passkey challenges never
 * answered, account page sessions, audit events past their retention and old webhook deliveries,
 * one instance at a time.
 */
export function startJanitor(
  knex: Knex,
  logger: Logger,
  lock: InstanceLock,
  auditRetentionSeconds: number,
): () => Promise<void> {
  return runJanitor(
    (signal) => deleteExpiredRows(knex, new Date(), signal, auditRetentionSeconds),
    lock,
    logger,
    'expired rows',
  );
}

/**
 * One janitor pass (without the lock). `auditRetentionSeconds` is `audit.retention`; without it
 * (passes that test other tables) audit events are kept.
 */
export async function deleteExpiredRows(
  knex: Knex,
  now: Date,
  signal?: AbortSignal,
  auditRetentionSeconds?: number,
): Promise<{
  sessions: number;
  revocations: number;
  loginWindows: number;
  totpWindows: number;
  webauthnChallenges: number;
  accountSessions: number;
  auditEvents: number;
  webhookDeliveries: number;
}> {
  const totpBefore = new Date(now.getTime() - TOTP_FAILURE_WINDOW_MS);
  const deliveriesBefore = new Date(now.getTime() - WEBHOOK_DELIVERY_RETENTION_MS);
  return {
    sessions: await drainExpired((limit) => apiSessionsRepository.deleteExpired(knex, now, limit), signal),
    revocations: await drainExpired((limit) => revocationsRepository.deleteExpired(knex, now, limit), signal),
    loginWindows: await drainExpired(
      (limit) => loginFailuresRepository.deleteStaleWindows(knex, now, limit),
      signal,
    ),
    totpWindows: await drainExpired(
      (limit) => mfaTotpFailuresRepository.deleteEndedWindows(knex, totpBefore, limit),
      signal,
    ),
    webauthnChallenges: await drainExpired(
      (limit) => webauthnChallengesRepository.deleteExpired(knex, now, limit),
      signal,
    ),
    accountSessions: await drainExpired(
      (limit) => accountSessionsRepository.deleteExpired(knex, now, limit),
      signal,
    ),
    auditEvents:
      auditRetentionSeconds === undefined
        ? 0
        : await drainExpired(
            (limit) =>
              auditRetentionRepository.deleteEventsBefore(
                knex,
                new Date(now.getTime() - auditRetentionSeconds * 1000),
                limit,
              ),
            signal,
          ),
    webhookDeliveries: await drainExpired(
      (limit) => auditRetentionRepository.deleteDeliveriesBefore(knex, deliveriesBefore, limit),
      signal,
    ),
  };
}
