import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { apiSessionsRepository } from '../repositories/api-sessions-repository.js';
import { revocationsRepository } from '../repositories/revocations-repository.js';
import { loginFailuresRepository } from '../repositories/login-failures-repository.js';

const EVERY_MS = 60_000;

/**
 * Deletes what has expired (API sessions, revocations, hourly login-failure windows) in bounded batches, once a minute. Every
 * instance runs it; the statements are idempotent.
 */
export function startJanitor(knex: Knex, logger: Logger): () => void {
  const timer = setInterval(() => {
    deleteExpiredRows(knex, new Date()).catch((err: unknown) =>
      logger.warn({ err }, 'clean-up of expired rows failed'),
    );
  }, EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export async function deleteExpiredRows(
  knex: Knex,
  now: Date,
): Promise<{ sessions: number; revocations: number; loginWindows: number }> {
  return {
    sessions: await apiSessionsRepository.deleteExpired(knex, now),
    revocations: await revocationsRepository.deleteExpired(knex, now),
    loginWindows: await loginFailuresRepository.deleteStaleWindows(knex, now),
  };
}
