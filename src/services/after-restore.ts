import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import { inTransaction } from '../db/transaction.js';
import { accountSessionsRepository } from '../repositories/account-sessions-repository.js';
import { apiSessionsRepository } from '../repositories/api-sessions-repository.js';
import { auditEventsRepository } from '../repositories/audit-events-repository.js';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { webhookOutboxRepository } from '../repositories/webhook-outbox-repository.js';
import type { AuditTrail } from './audit-trail.js';
import { replaceSigningKeys } from './keys/key-service.js';

export interface AfterRestoreDeps {
  knex: Knex;
  box: SecretBox;
  audit: AuditTrail;
}

/** What the restore step ended and replaced; the counts are of what had not expired yet. */
export interface AfterRestoreSummary {
  apiSessions: number;
  oidcSessions: number;
  grants: number;
  refreshTokens: number;
  /** Authorization and device codes not yet redeemed. */
  codes: number;
  accountSessions: number;
  /** The new signing key, and how many restored keys were withdrawn. */
  kid: string;
  keysWithdrawn: number;
  /** The newest audit event of the restored data: about when its dump was taken. */
  restoredUpTo: Date | null;
  /** The trail's transaction ids came from another cluster and were set to 0. */
  trailRenumbered: boolean;
}

const CODE_MODELS = ['AuthorizationCode', 'DeviceCode', 'BackchannelAuthenticationRequest'];

/**
 * The step run after a restore, before any controller starts (docs/operations.md, "Backups"): a
 * backup brings back every session, refresh token and key that was ended after it was taken, so
 * all of them end here, in one transaction: every API session, every oidc-provider row (sessions,
 * grants, refresh tokens, codes, logins in flight), every account page session; and the signing
 * keys are replaced, so that no access or ID token issued before the restore verifies any more.
 * Identities, authenticators, policies, CAs and enrollments stay as restored.
 *
 * The audit trail orders events by the id of their transaction, and readers take only those below
 * the oldest one still running (docs/adr/0015-audit-events-and-webhooks.md). Restored into a
 * cluster whose counter is behind the dumped one, the restored events would look unfinished and
 * stay unread, and the webhook fan-out, whose cursor is ahead, would pass over every new event;
 * so then the restored rows and the fan-out's cursor are set to transaction 0 (their `id` order
 * kept).
 */
export async function afterRestore(deps: AfterRestoreDeps): Promise<AfterRestoreSummary> {
  return inTransaction(deps.knex, async (trx, afterCommit) => {
    const apiSessions = await apiSessionsRepository.deleteAll(trx);
    const payloads = await oidcPayloadsRepository.deleteAll(trx);
    const accountSessions = await accountSessionsRepository.deleteAll(trx);
    const trailRenumbered = await renumberTrailFromAnotherCluster(trx);
    const restoredUpTo = await auditEventsRepository.newestOccurredAt(trx);
    const { kid, withdrawn } = await replaceSigningKeys(trx, deps.box);
    const summary: AfterRestoreSummary = {
      apiSessions,
      oidcSessions: payloads.Session ?? 0,
      grants: payloads.Grant ?? 0,
      refreshTokens: payloads.RefreshToken ?? 0,
      codes: CODE_MODELS.reduce((n, model) => n + (payloads[model] ?? 0), 0),
      accountSessions,
      kid,
      keysWithdrawn: withdrawn,
      restoredUpTo,
      trailRenumbered,
    };
    await deps.audit.store(trx, afterCommit, {
      event: 'database.restored',
      ...summary,
      restoredUpTo: restoredUpTo?.toISOString() ?? null,
    });
    return summary;
  });
}

/** See afterRestore: restored transaction ids ahead of this cluster's counter are set to 0. */
async function renumberTrailFromAnotherCluster(trx: Knex.Transaction): Promise<boolean> {
  const ahead =
    (await auditEventsRepository.aheadOfThisCluster(trx)) ||
    (await webhookOutboxRepository.dispatchAheadOfThisCluster(trx));
  if (ahead) {
    await auditEventsRepository.renumberTransactions(trx);
    await webhookOutboxRepository.rewindDispatchTransaction(trx);
  }
  return ahead;
}

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The one line the restore step prints. */
export function afterRestoreLine(s: AfterRestoreSummary): string {
  const ended = [
    count(s.apiSessions, 'API session'),
    count(s.oidcSessions, 'OIDC session'),
    count(s.grants, 'grant'),
    count(s.refreshTokens, 'refresh token'),
    count(s.codes, 'unredeemed code'),
    count(s.accountSessions, 'account page session'),
  ].join(', ');
  const keys = `signing key ${s.kid} replaces ${count(s.keysWithdrawn, 'restored key')}`;
  const upTo = s.restoredUpTo
    ? `the restored data ends about ${s.restoredUpTo.toISOString()} (its newest audit event)`
    : 'the restored data has no audit events';
  const trail = s.trailRenumbered ? '; audit trail renumbered for this cluster' : '';
  return `after restore: ended ${ended}; ${keys}; ${upTo}${trail}`;
}
