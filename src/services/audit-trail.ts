import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Db } from '../db/create-database.js';
import type { AfterCommit } from '../db/transaction.js';
import { auditEventsRepository, type AuditEventInsert } from '../repositories/audit-events-repository.js';
import { attemptAggregateKey } from './attempt-aggregate-key.js';
import { currentRequestScope, type RequestScope } from './request-scope.js';

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

/**
 * `db` as the transaction of a change, for code typed with `Db` that always runs in one: an event
 * stored outside its change's transaction would break the trail's guarantee, so this refuses.
 */
export function changeTransaction(db: Db): Knex.Transaction {
  if (!(db as Partial<Knex.Transaction>).isTransaction) {
    throw new Error('an audit event of a change is stored in the transaction of that change');
  }
  return db as Knex.Transaction;
}

/** One `session.ended` event, stored in the transaction that ended the session: which session, whose, and why. */
export async function recordSessionEnded(
  audit: AuditTrail,
  trx: Db,
  afterCommit: AfterCommit,
  session: EndedSession,
  cause: string | undefined,
): Promise<void> {
  await audit.store(changeTransaction(trx), afterCommit, {
    event: 'session.ended',
    sessionId: session.id,
    kind: session.kind,
    identityId: session.identityId,
    ...(cause !== undefined && { cause }),
  });
}

/**
 * The audit trail: `store` for a change, in its transaction; `storeAlone` for a decision with no
 * write; `storeAttempt` for a failed or refused login or second factor (aggregated per minute);
 * `hold` with `takeHeld` or `storeHeld` for a successful one, stored by the write the login makes
 * anyway (docs/architecture.md, "Audit trail").
 */
export interface AuditTrail {
  /** Logs `event` only: for events about this instance alone (`revocation.received`). */
  record(event: AuditEvent): void;
  /**
   * Stores `event` in `trx`, the transaction of the change it records (so the two commit or roll
   * back together), and logs it once that commits.
   */
  store(trx: Knex.Transaction, afterCommit: AfterCommit, event: AuditEvent): Promise<void>;
  /**
   * Stores `event` in a statement of its own and logs it: a security-relevant decision that comes
   * with no write to join (`passkey.clone-suspected`, `oidc.device.confirmed`, …).
   */
  storeAlone(event: AuditEvent): Promise<void>;
  /**
   * A failed or refused attempt (`auth.login`, `auth.second-factor`, a wrong or throttled device
   * user code): counted in one row per event, outcome, method, identity (none for a username that
   * names no identity), client address network and minute (`attemptAggregateKey`;
   * docs/operations.md, "Audit events"), then logged. `tx`: the transaction of a write the
   * refusal makes anyway, with its `afterCommit` (logged once it commits); without it, one
   * statement of its own. A typed username is never part of the event: people type passwords into that field.
   */
  storeAttempt(event: AuditEvent, tx?: AttemptTransaction): Promise<void>;
  /**
   * A successful authentication decided on this request (`auth.login`, `auth.second-factor`):
   * held for the write the login makes on this request (`takeHeld`, `storeHeld`), which stores it
   * in its own statement or transaction. One that no such write committed with is stored in a
   * statement of its own when the request ends, so each is stored exactly once. Outside a request
   * it is stored at once.
   */
  hold(event: AuditEvent): Promise<void>;
  /**
   * The events this request holds, for the write that stores them: call `logged` once that write
   * has committed, which takes them out of the hold and logs them. A write that fails (or a
   * transaction run again after a deadlock) leaves them held, to be stored once all the same.
   */
  takeHeld(): HeldEvents;
  /** Stores the events this request holds in `trx`, the transaction of the login's write; logs them once it commits. */
  storeHeld(trx: Knex.Transaction, afterCommit: AfterCommit): Promise<void>;
  subscribe(listener: AuditListener): () => void;
}

/** The transaction of a write the refusal makes anyway, and its `afterCommit`: always both. */
export interface AttemptTransaction {
  trx: Knex.Transaction;
  afterCommit: AfterCommit;
}

/** Held events taken by a write: their stored form, and their log lines once it committed. */
export interface HeldEvents {
  rows: AuditEventInsert[];
  logged(): void;
}

const NOTHING_HELD: HeldEvents = { rows: [], logged: () => undefined };

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

/**
 * Writes each event as one structured log line (`event` field) and hands it to in-process
 * listeners (metrics count from the same events, so the two never disagree). The request id,
 * client address and caller are taken from the request scope when the event does not name them.
 * `knex`: where the events that join no write of their own are stored (`storeAlone`,
 * `storeAttempt`, what a request held and no write took); without it (tools, unit tests) those
 * are only logged.
 */
export function createAuditTrail(logger: Logger, knex?: Knex): AuditTrail {
  const listeners = new Set<AuditListener>();
  const log = logger.child({ audit: true });
  const held = new WeakMap<RequestScope, AuditEvent[]>();
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
  async function storeAll(events: AuditEvent[]): Promise<void> {
    if (knex) await auditEventsRepository.insertMany(knex, events.map(storedForm));
    for (const event of events) record(event);
  }

  /** The events held now; they leave the hold only once the write that took them has committed. */
  function takeHeld(): HeldEvents {
    const scope = currentRequestScope();
    const events = scope && held.get(scope);
    if (!events || events.length === 0) return NOTHING_HELD;
    const taken = [...events];
    return {
      rows: taken.map(storedForm),
      logged: () => {
        const now = held.get(scope);
        if (now)
          held.set(
            scope,
            now.filter((e) => !taken.includes(e)),
          );
        for (const event of taken) record(event);
      },
    };
  }

  return {
    record,
    async store(trx, afterCommit, raw) {
      const event = withScope(raw);
      await auditEventsRepository.insert(trx, storedForm(event));
      afterCommit(() => record(event));
    },
    async storeAlone(raw) {
      const event = withScope(raw);
      if (knex) await auditEventsRepository.insert(knex, storedForm(event));
      record(event);
    },
    async storeAttempt(raw, tx) {
      const event = withScope(raw);
      const db = tx?.trx ?? knex;
      if (db) await auditEventsRepository.upsertAttempt(db, storedForm(event), attemptAggregateKey(event));
      if (tx) tx.afterCommit(() => record(event));
      else record(event);
    },
    async hold(raw) {
      const event = withScope(raw);
      const scope = currentRequestScope();
      if (!scope?.beforeResponse) return storeAll([event]);
      const events = held.get(scope);
      if (events) {
        events.push(event);
        return;
      }
      held.set(scope, [event]);
      // Whatever no write of the request took is stored before the response goes out.
      scope.beforeResponse(async () => {
        const { rows, logged } = takeHeld();
        if (rows.length === 0) return;
        if (knex) await auditEventsRepository.insertMany(knex, rows);
        logged();
      });
    },
    takeHeld,
    async storeHeld(trx, afterCommit) {
      const { rows, logged } = takeHeld();
      await auditEventsRepository.insertMany(trx, rows);
      afterCommit(logged);
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
  store: async () => undefined,
  storeAlone: async () => undefined,
  storeAttempt: async () => undefined,
  hold: async () => undefined,
  takeHeld: () => NOTHING_HELD,
  storeHeld: async () => undefined,
  subscribe: () => () => undefined,
};
