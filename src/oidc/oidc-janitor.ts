import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { drainExpired, runJanitor } from '../services/janitor.js';

// Consumed codes and refresh tokens stay until they expire (replay detection); then a margin.
const EXPIRED_MARGIN_MS = 5 * 60_000;

/** One pass: every oidc-provider row expired for longer than the margin at `now`. */
export function deleteExpiredOidcPayloads(knex: Knex, now: Date): Promise<number> {
  const before = new Date(now.getTime() - EXPIRED_MARGIN_MS);
  return drainExpired((limit) => oidcPayloadsRepository.deleteExpired(knex, before, limit));
}

/** Auth requests are created anonymously; a pass a minute removes all that have expired. */
export function startOidcJanitor(knex: Knex, logger: Logger): () => void {
  return runJanitor(() => deleteExpiredOidcPayloads(knex, new Date()), logger, 'oidc payloads');
}
