import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { InstanceLock } from '../db/instance-lock.js';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { drainExpired, runJanitor } from '../services/janitor.js';

/**
 * Consumed codes and refresh tokens stay until they expire (replay detection); then a margin,
 * during which an expired device code is still read, so that its polls answer `expired_token`.
 */
export const EXPIRED_MARGIN_MS = 5 * 60_000;

/** One pass: every oidc-provider row expired for longer than the margin at `now`. */
export function deleteExpiredOidcPayloads(knex: Knex, now: Date, signal?: AbortSignal): Promise<number> {
  const before = new Date(now.getTime() - EXPIRED_MARGIN_MS);
  return drainExpired((limit) => oidcPayloadsRepository.deleteExpired(knex, before, limit), signal);
}

/**
 * Interactions (auth requests) are created anonymously; a pass a minute, by one instance at a
 * time, removes every model instance that has expired: interactions, codes, refresh tokens,
 * sessions, grants.
 */
export function startOidcJanitor(knex: Knex, logger: Logger, lock: InstanceLock): () => Promise<void> {
  return runJanitor(
    (signal) => deleteExpiredOidcPayloads(knex, new Date(), signal),
    lock,
    logger,
    'oidc payloads',
  );
}
