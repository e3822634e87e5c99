import type { Knex } from 'knex';
import type { Db } from '../db/create-database.js';
import { inTransaction, type AfterCommit } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import { newId, newToken, sha256Hex } from '../crypto/random.js';
import { apiSessionsRepository, type ApiSession } from '../repositories/api-sessions-repository.js';
import { NO_AUDIT, recordSessionEnded, type AuditTrail } from './audit-trail.js';
import type { RevocationService } from './revocation-service.js';
import type { SessionLimit } from '../repositories/auth-policies-repository.js';
import type { SessionLimitService } from './session-limit.js';

/**
 * The amr of a session (or login) once a second factor is paid: the primary credential and that
 * factor are two factors, hence `mfa` (RFC 8176); `factor` is the factor's own value (`otp` for a
 * TOTP code, `pop` for a passkey). One rule for the legacy MFA step and passwordless passkeys.
 */
export const withSecondFactor = (amr: readonly string[], factor: string): string[] => [
  ...new Set([...amr.filter((v) => v !== 'mfa'), factor, 'mfa']),
];

export interface SessionServiceDeps {
  db: Knex;
  /** edge.api.sessionTimeout in seconds. */
  sessionTimeout: number;
  /** edge.oidc.maxSessionDuration in seconds: the longest a session lives from its login, used or not. */
  maxSessionDuration: number;
  audit?: AuditTrail;
  /** A logout is an `api_session` revocation, so every instance drops the session at once. */
  revocations: Pick<RevocationService, 'revokeApiSession'>;
  /** The policy's concurrent-session limit, checked when a session becomes fully authenticated. */
  limit: Pick<SessionLimitService, 'admit'>;
  now?: () => Date;
  /** Sessions kept in memory; the oldest entry goes first when full. */
  maxCached?: number;
  /** A safety net only: the change feed drops entries at once. */
  cacheTtlMs?: number;
}

export interface NewSessionFacts {
  identityId: string;
  amr: string[];
  configTypes?: string[];
  isCertExtendable?: boolean;
  mfaRequired: boolean;
  /** The primary login method (`password`, `cert`, `ext-jwt`). */
  authMethod: string;
  /** The client address of the login request, as the request log writes it. */
  ipAddress: string | null;
}

const invalid = () => new AppError('UNAUTHORIZED', { challenges: [challenges.sessionInvalid()] });
const expired = () => new AppError('UNAUTHORIZED', { challenges: [challenges.sessionExpired()] });

/**
 * Legacy API sessions: an opaque token stored as its SHA-256, expiring after `sessionTimeout`
 * without use and `maxSessionDuration` after its login however busy (a stolen token must not be
 * kept alive forever by using it; the same ceiling as an OIDC refresh chain). The stored expiry
 * is the session's real one (the one responses state); a use slides it only once it lags the
 * slid value by a minute (or a tenth of the timeout if that is shorter), so a busy session costs
 * one write a minute instead of one per request, and an idle session ends between that slack
 * and `sessionTimeout` after its last use (docs/operations.md).
 *
 * Sessions are kept in memory by token hash, so a request in the steady state reads nothing
 * (docs/architecture.md, "Legacy sessions in memory"). Every way a session ends reaches every
 * instance: a logout and the revocation of its identity publish events on the change feed, which
 * call `forget` / `forgetIdentity`; a deleted identity publishes an identity event too; an expired
 * session is refused by its expiry, and the database is asked again before refusing, since another
 * instance may have slid it. A session whose MFA step is still owed is not kept: completing the step
 * changes the row, and every instance must see that change.
 */
export function createSessionService({
  db,
  sessionTimeout,
  maxSessionDuration,
  audit = NO_AUDIT,
  revocations,
  limit,
  now = () => new Date(),
  maxCached = 10_000,
  cacheTtlMs = 300_000,
}: SessionServiceDeps) {
  const timeoutMs = sessionTimeout * 1000;
  const maxSessionMs = maxSessionDuration * 1000;
  const endOf = (s: ApiSession) => s.createdAt.getTime() + maxSessionMs;
  // A row written before the ceiling existed may hold a later expiry: what is shown and enforced
  // is never later than the ceiling.
  const capped = (s: ApiSession): ApiSession =>
    s.expiresAt.getTime() > endOf(s) ? { ...s, expiresAt: new Date(endOf(s)) } : s;
  // Writes are skipped while the stored expiry is this close to the one a write would set.
  const writeSlackMs = Math.min(60_000, timeoutMs / 10);
  const cache = new Map<string, { session: ApiSession; at: number }>();
  const hashOf = new Map<string, string>();
  // Bumped by every drop: a read that started before a drop must not put the session back.
  let epoch = 0;

  function drop(hash: string): void {
    const entry = cache.get(hash);
    if (!entry) return;
    cache.delete(hash);
    hashOf.delete(entry.session.id);
  }

  function remember(hash: string, session: ApiSession, readAtEpoch: number, at: Date): void {
    if (readAtEpoch !== epoch || (session.mfaRequired && !session.mfaComplete)) return;
    drop(hash);
    cache.set(hash, { session, at: at.getTime() });
    hashOf.set(session.id, hash);
    if (cache.size > maxCached) drop(cache.keys().next().value!);
  }

  /** The row as the database has it now; refuses an ended or expired session. */
  async function read(hash: string, at: Date): Promise<ApiSession> {
    const readAtEpoch = epoch;
    const row = await apiSessionsRepository.findByTokenHash(db, hash);
    const session = row && capped(row);
    if (!session || session.expiresAt <= at) drop(hash);
    if (!session) throw invalid();
    if (session.expiresAt <= at) throw expired();
    remember(hash, session, readAtEpoch, at);
    return session;
  }

  /** An `api_session` event: that session ended. */
  function forget(sessionId: string): void {
    epoch++;
    const hash = hashOf.get(sessionId);
    if (hash) drop(hash);
  }

  async function create(
    facts: NewSessionFacts,
    trx: Db = db,
  ): Promise<{ session: ApiSession; token: string }> {
    const token = newToken();
    const createdAt = now();
    const session = await apiSessionsRepository.insert(trx, {
      id: newId(),
      identityId: facts.identityId,
      kind: 'legacy',
      tokenHash: sha256Hex(token),
      amr: facts.amr,
      configTypes: facts.configTypes ?? [],
      isCertExtendable: facts.isCertExtendable ?? false,
      mfaRequired: facts.mfaRequired,
      mfaComplete: false,
      authMethod: facts.authMethod,
      ipAddress: facts.ipAddress,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + Math.min(timeoutMs, maxSessionMs)),
    });
    return { session, token };
  }

  return {
    create,

    /**
     * A login's new session under its policy's session limit (`sessions`, as the login read the
     * policy). The limit is checked now when the session is complete; a session that still owes its
     * MFA step neither counts nor evicts until that step (`completeMfa`). Without a limit: the
     * one insert of `create`.
     */
    async open(
      facts: NewSessionFacts,
      sessions: SessionLimit,
    ): Promise<{ session: ApiSession; token: string }> {
      // The login's audit events (held by the request, services/audit-trail.ts) commit with its session.
      const work = async (trx: Knex.Transaction, afterCommit: AfterCommit) => {
        const opened = await create(facts, trx);
        await audit.storeHeld(trx, afterCommit);
        return opened;
      };
      if (facts.mfaRequired || sessions.max === 0) return inTransaction(db, work);
      return limit.admit(facts.identityId, work);
    },

    /** The live session for a token, its expiry slid forward; 401 with the svc-session challenge otherwise. */
    async resolve(token: string): Promise<ApiSession> {
      if (token.length > 256) throw invalid();
      const hash = sha256Hex(token);
      const at = now();
      const hit = cache.get(hash);
      const session =
        hit && hit.session.expiresAt > at && at.getTime() - hit.at < cacheTtlMs
          ? hit.session
          : await read(hash, at);
      const next = new Date(Math.min(at.getTime() + timeoutMs, endOf(session)));
      const stale = new Date(next.getTime() - writeSlackMs);
      if (session.expiresAt > stale) return session;
      const readAtEpoch = epoch;
      const touched = await apiSessionsRepository.touch(db, session.id, at, next, stale);
      if (touched) {
        remember(hash, capped(touched), readAtEpoch, at);
        return capped(touched);
      }
      // Nothing written: another request slid it first (the row is live), or it ended meanwhile.
      drop(hash);
      return read(hash, at);
    },

    /** Logout: the row goes and every instance learns it from the change feed. */
    async end(sessionId: string): Promise<void> {
      forget(sessionId);
      await inTransaction(db, async (trx, afterCommit) => {
        const ended = await revocations.revokeApiSession(trx, sessionId, { afterCommit, cause: 'logout' });
        if (ended) await recordSessionEnded(audit, trx, afterCommit, ended, 'logout');
      });
    },

    /** The MFA step is done: the session now counts, under the limit of its identity's policy. */
    async completeMfa(sessionId: string, identityId: string, amr: string[]): Promise<ApiSession | undefined> {
      forget(sessionId);
      return limit.admit(
        identityId,
        async (trx, afterCommit) => {
          const completed = await apiSessionsRepository.completeMfa(trx, sessionId, amr);
          // The second factor's success event (held by the request) commits with the step.
          await audit.storeHeld(trx, afterCommit);
          return completed;
        },
        { excluding: sessionId },
      );
    },

    forget,

    /** An identity event that ends access: its sessions were deleted with it. */
    forgetIdentity(identityId: string): void {
      epoch++;
      for (const [hash, entry] of cache) if (entry.session.identityId === identityId) drop(hash);
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
