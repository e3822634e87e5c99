import type { Knex } from 'knex';
import { newId } from '../../src/crypto/random.js';

export const HOOK_URL = 'https://receiver.example.com/hooks/svc?token=receiver-own-token';

export interface DeliveryRowInput {
  webhookId: string;
  sequence: number;
  event?: string;
  status?: 'pending' | 'succeeded' | 'failed';
  createdAt?: Date;
  nextAttemptAt?: Date | null;
  lastStatusCode?: number | null;
  lastError?: string | null;
  succeededAt?: Date | null;
  attempts?: { attemptedAt: Date; statusCode: number | null; error: string | null; durationMs: number }[];
}

/**
 * A delivery row (and its attempt rows) written directly, in the states the delivery engine leaves
 * them in: the management API only reads these and retries them.
 */
export async function insertDelivery(knex: Knex, d: DeliveryRowInput): Promise<string> {
  const id = newId();
  const createdAt = d.createdAt ?? new Date();
  const attempts = d.attempts ?? [];
  const last = attempts.at(-1);
  const status = d.status ?? 'pending';
  await knex('webhook_deliveries').insert({
    id,
    webhook_id: d.webhookId,
    event_id: d.sequence,
    event: d.event ?? 'identity.created',
    sequence: d.sequence,
    payload: JSON.stringify({ type: d.event ?? 'identity.created', sequence: d.sequence, data: {} }),
    status,
    attempts: attempts.length,
    created_at: createdAt,
    next_attempt_at:
      d.nextAttemptAt === undefined ? (status === 'pending' ? createdAt : null) : d.nextAttemptAt,
    last_attempt_at: last?.attemptedAt ?? null,
    last_status_code: d.lastStatusCode === undefined ? (last?.statusCode ?? null) : d.lastStatusCode,
    last_error: d.lastError === undefined ? (last?.error ?? null) : d.lastError,
    succeeded_at: d.succeededAt ?? (status === 'succeeded' ? (last?.attemptedAt ?? createdAt) : null),
  });
  for (const a of attempts) {
    await knex('webhook_delivery_attempts').insert({
      delivery_id: id,
      attempted_at: a.attemptedAt,
      status_code: a.statusCode,
      error: a.error,
      duration_ms: a.durationMs,
      instance_id: 'test-instance',
    });
  }
  return id;
}

export const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);
