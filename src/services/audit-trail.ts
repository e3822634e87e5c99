import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { AfterCommit } from '../db/transaction.js';
import { auditEventsRepository, type AuditEventInsert } from '../repositories/audit-events-repository.js';
import { currentRequestScope } from './request-scope.js';

/**
 * One security-relevant decision or change: an authentication outcome, an identity, policy,
 * signer or CA change, a revocation, a key rotation. Never carries a secret. The catalog is in
 * docs/operations.md ("Audit events").
 */
export interface AuditEvent {
  /** Dotted name, e.g. `auth.login`, `identity.created`, `key.rotated`. */
  event: string;
  outcome?: 'success' | 'failure' | 'lockout';
  /** Authentication method (`password`, `cert`, `ext-jwt`, `totp`, …) where one applies. */
  method?: string;
  /** Why a decision failed, as a stable code. */
  reason?: string;
  /** The identity the event is about: who logs in, the identity changed, else the admin acting. */
  identityId?: string;
  requestId?: string;
  sourceAddress?: string;
  /** The authenticated caller who made a change. */
  actorId?: string;
  [detail: string]: unknown;
}

export type AuditListener = (event: AuditEvent) => void;

/** An API session that ended, as its `session.ended` event names it. */
export interface EndedSession {
  id: string;
  kind: string;
  identityId: string;
}

/** One `session.ended` event, once the transaction commits: which session, whose, and why. */
export function recordSessionEnded(
  audit: AuditTrail,
  afterCommit: AfterCommit,
  session: EndedSession,
  cause: string | undefined,
): void {
  audit.recordAfterCommit(afterCommit, {
    event: 'session.ended',
    sessionId: session.id,
    kind: session.kind,
    identityId: session.identityId,
    ...(cause !== undefined && { cause }),
  });
}

/**
 * Writes each event as one structured log line (`event` field) and hands it to in-process
 * listeners (metrics count from the same events, so the two never disagree). The request id,
 * client address and caller are taken from the request scope when the event does not name them.
 */
export interface AuditTrail {
  record(event: AuditEvent): void;
  /** Records `event` once the transaction commits; a rolled-back change is never recorded. */
  recordAfterCommit(afterCommit: AfterCommit, event: AuditEvent): void;
  /**
   * Stores `event` in `trx`, the transaction of the change it records (so the two commit or roll
   * back together), and logs it once that commits.
   */
  store(trx: Knex.Transaction, afterCommit: AfterCommit, event: AuditEvent): Promise<void>;
  subscribe(listener: AuditListener): () => void;
}

/** Fills what the request scope knows; events outside a request (the revocation feed) have none. */
function withScope(event: AuditEvent): AuditEvent {
  const scope = currentRequestScope();
  if (!scope) return event;
  const actorId = event.actorId ?? scope.actorId;
  return {
    ...event,
    identityId: event.identityId ?? actorId,
    requestId: event.requestId ?? scope.requestId,
    sourceAddress: event.sourceAddress ?? scope.sourceAddress(),
    ...(actorId !== undefined && { actorId }),
  };
}

/** The indexed fields of an event as columns, every other field under `details`. */
function storedForm(e: AuditEvent): AuditEventInsert {
  const { event, outcome, identityId, actorId, sourceAddress, requestId, ...details } = e;
  return { event, outcome, identityId, actorId, sourceAddress, requestId, details };
}

export function createAuditTrail(logger: Logger): AuditTrail {
  const listeners = new Set<AuditListener>();
  const log = logger.child({ audit: true });
  function record(raw: AuditEvent): void {
    const event = withScope(raw);
    log.info(event, event.event);
    for (const listener of listeners) {
      // A listener's bug must not turn a recorded decision into a failed request.
      try {
        listener(event);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'audit listener failed');
      }
    }
  }
  return {
    record,
    recordAfterCommit(afterCommit, event) {
      afterCommit(() => record(event));
    },
    async store(trx, afterCommit, raw) {
      const event = withScope(raw);
      await auditEventsRepository.insert(trx, storedForm(event));
      afterCommit(() => record(event));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * A stable code for why a decision failed: a detail's text or its `reason` in kebab case
 * (`'wrong, replayed or used code'` → `wrong-replayed-or-used-code`), else the fallback (an error code).
 */
export function reasonCode(detail: unknown, fallback: string): string {
  const reason =
    typeof detail === 'object' && detail !== null && 'reason' in detail
      ? (detail as { reason: unknown }).reason
      : detail;
  const text = typeof reason === 'string' ? reason : fallback;
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** For services built without a trail (unit tests, tools): records nothing. */
export const NO_AUDIT: AuditTrail = {
  record: () => undefined,
  recordAfterCommit: () => undefined,
  store: async () => undefined,
  subscribe: () => () => undefined,
};
