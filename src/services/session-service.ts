import type { Db } from '../db/create-database.js';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import { newId, newToken, sha256Hex } from '../crypto/random.js';
import { apiSessionsRepository, type ApiSession } from '../repositories/api-sessions-repository.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';

export interface SessionServiceDeps {
  db: Db;
  /** edge.api.sessionTimeout in seconds. */
  sessionTimeout: number;
  audit?: AuditTrail;
  now?: () => Date;
}

export interface NewSessionFacts {
  identityId: string;
  amr: string[];
  configTypes?: string[];
  isCertExtendable?: boolean;
  mfaRequired: boolean;
}

/**
 * Legacy API sessions: an opaque token stored as its SHA-256, expiring after `sessionTimeout`
 * without use. The stored expiry is the session's real one (the one responses state); a use slides
 * it only once it lags the slid value by a minute (or a tenth of the timeout if that is shorter), so
 * a busy session costs one write a minute instead of one per request, and an idle session ends
 * between that slack and `sessionTimeout` after its last use (docs/operations.md).
 */
export function createSessionService({
  db,
  sessionTimeout,
  audit = NO_AUDIT,
  now = () => new Date(),
}: SessionServiceDeps) {
  const timeoutMs = sessionTimeout * 1000;
  // Writes are skipped while the stored expiry is this close to the one a write would set.
  const writeSlackMs = Math.min(60_000, timeoutMs / 10);

  return {
    async create(facts: NewSessionFacts, trx: Db = db): Promise<{ session: ApiSession; token: string }> {
      const token = newToken();
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
        expiresAt: new Date(now().getTime() + timeoutMs),
      });
      return { session, token };
    },

    /** The live session for a token, its expiry slid forward; 401 with the svc-session challenge otherwise. */
    async resolve(token: string): Promise<ApiSession> {
      const session =
        token.length <= 256 ? await apiSessionsRepository.findByTokenHash(db, sha256Hex(token)) : undefined;
      if (!session) throw new AppError('UNAUTHORIZED', { challenges: [challenges.sessionInvalid()] });
      const at = now();
      if (session.expiresAt <= at)
        throw new AppError('UNAUTHORIZED', { challenges: [challenges.sessionExpired()] });
      const next = new Date(at.getTime() + timeoutMs);
      const stale = new Date(next.getTime() - writeSlackMs);
      if (session.expiresAt > stale) return session;
      const touched = await apiSessionsRepository.touch(db, session.id, at, next, stale);
      if (touched) return touched;
      // Nothing written: another request slid it first (the row is live), or it ended meanwhile.
      const current = await apiSessionsRepository.findById(db, session.id);
      if (!current) throw new AppError('UNAUTHORIZED', { challenges: [challenges.sessionInvalid()] });
      if (current.expiresAt <= at)
        throw new AppError('UNAUTHORIZED', { challenges: [challenges.sessionExpired()] });
      return current;
    },

    async end(sessionId: string): Promise<boolean> {
      const ended = await apiSessionsRepository.delete(db, sessionId);
      if (ended)
        audit.record({ event: 'session.ended', sessionId, kind: 'legacy', identityId: ended.identityId });
      return ended !== undefined;
    },

    async completeMfa(sessionId: string, amr: string[]): Promise<ApiSession | undefined> {
      return apiSessionsRepository.completeMfa(db, sessionId, amr);
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
