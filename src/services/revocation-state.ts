import type { Logger } from 'pino';
import { createChangeFeed, type ChangeFeed, type ChangeFeedMode } from '../db/change-feed.js';
import type { Database } from '../db/create-database.js';
import {
  revocationsRepository,
  type Revocation,
  type RevocationKind,
} from '../repositories/revocations-repository.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import { outsideRequestScope } from './request-scope.js';

export const REVOCATION_CHANNEL = 'svc_revocations';

// Ids are taken at insert but become visible at commit, so a smaller id can appear after a larger
// one: every gap below the highest id seen is asked for again until it fills or this long passes
// (a rolled-back insert leaves a gap for good).
const GAP_MS = 10 * 60_000;
// A jump this large is not an in-flight transaction (sequence gaps of rollbacks, a restore).
const MAX_GAP = 1000;
const PAGE = 1000;
const START_WATCH = 50;

interface Entry {
  /** Tokens of the identity with a generation below this are refused; Infinity = deleted. */
  minGeneration: number;
  expiresAt: number;
}

export interface RevocationStateDeps {
  database: Database;
  logger: Logger;
  audit?: AuditTrail;
  pollMs?: number;
  /** How other processes' revocations are noticed (src/db/change-feed.ts); default `listen`. */
  changeFeed?: ChangeFeedMode;
  now?: () => number;
}

/**
 * The revocations every process must know without a database read per request
 * (docs/adr/0006-revocation-listen-notify-catch-up.md): API sessions ended and identities whose tokens were
 * invalidated. Kept current by a change feed: PostgreSQL LISTEN/NOTIFY plus a catch-up read every
 * `pollMs` (1 s), or the catch-up read alone, so a lost notification or a dropped listener
 * connection delays a revocation by at most that long.
 */
export function createRevocationState({
  database,
  logger,
  audit = NO_AUDIT,
  pollMs = 1000,
  changeFeed = 'listen',
  now = Date.now,
}: RevocationStateDeps) {
  const sessions = new Map<string, number>();
  const identities = new Map<string, Entry>();
  const gaps = new Map<number, number>();
  const identityListeners: ((identityId: string, kind: RevocationKind) => void)[] = [];
  const sessionListeners: ((sessionId: string) => void)[] = [];
  let maxId = 0;
  // What is in force at start was received by an earlier run of this process, or never concerned it.
  let loaded = false;
  const feed: ChangeFeed = createChangeFeed({
    database,
    mode: changeFeed,
    channel: REVOCATION_CHANNEL,
    intervalMs: pollMs,
    logger,
  });
  /** Set while catch-up reads fail (the database is down): logged once, and once on recovery. */
  let failingSince: number | undefined;
  let refreshing: Promise<void> | undefined;
  let again: Promise<void> | undefined;

  const apply = (r: Revocation) => {
    gaps.delete(r.id);
    if (r.id > maxId) {
      if (r.id - maxId <= MAX_GAP) for (let id = maxId + 1; id < r.id; id++) gaps.set(id, now());
      maxId = r.id;
    }
    const expiresAt = r.expiresAt.getTime();
    if (expiresAt <= now()) return;
    if (loaded && r.kind !== 'identity_facts') {
      audit.record({
        event: 'revocation.received',
        kind: r.kind === 'api_session' ? 'api-session' : 'identity',
        revocationId: r.id,
        ...(r.kind === 'identity' ? { identityId: r.subject } : { sessionId: r.subject }),
      });
    }
    if (r.kind === 'api_session') {
      sessions.set(r.subject, Math.max(sessions.get(r.subject) ?? 0, expiresAt));
      for (const listener of sessionListeners) listener(r.subject);
    }
    if (r.kind === 'identity' || r.kind === 'identity_facts') {
      for (const listener of identityListeners) listener(r.subject, r.kind);
    }
    if (r.kind === 'identity') {
      const minGeneration = r.generation === null ? Infinity : r.generation;
      const current = identities.get(r.subject);
      identities.set(r.subject, {
        minGeneration: Math.max(current?.minGeneration ?? 0, minGeneration),
        expiresAt: Math.max(current?.expiresAt ?? 0, expiresAt),
      });
    }
  };

  const prune = () => {
    const t = now();
    for (const [k, exp] of sessions) if (exp <= t) sessions.delete(k);
    for (const [k, e] of identities) if (e.expiresAt <= t) identities.delete(k);
    for (const [id, at] of gaps) if (at < t - GAP_MS) gaps.delete(id);
  };

  async function readNow(): Promise<void> {
    for (;;) {
      const rows = await revocationsRepository.listAfterOrIn(database.knex, maxId, [...gaps.keys()], PAGE);
      rows.forEach(apply);
      if (rows.length < PAGE) break;
    }
    prune();
  }

  /**
   * At start: everything in force and the high-water mark. The few ids just below it that are
   * not there yet may belong to transactions still in flight: they are watched like gaps.
   */
  async function load(): Promise<void> {
    const top = await revocationsRepository.maxId(database.knex);
    const live = await revocationsRepository.listLive(database.knex, new Date(now()));
    live.forEach(apply);
    gaps.clear();
    const present = new Set(live.map((r) => r.id));
    for (let id = Math.max(1, top - START_WATCH + 1); id <= top; id++)
      if (!present.has(id)) gaps.set(id, now());
    maxId = Math.max(maxId, top);
    loaded = true;
  }

  /** Single-flight catch-up read. */
  function refresh(): Promise<void> {
    // A read already under way may have started before the caller's commit: read once more after it.
    if (refreshing) {
      again ??= refreshing
        .catch(() => undefined)
        .then(() => {
          again = undefined;
          return refresh();
        });
      return again;
    }
    // Shared by every caller and the feed's own timer: what it reads belongs to no one request.
    refreshing = outsideRequestScope(readNow).finally(() => (refreshing = undefined));
    return refreshing;
  }

  /** A wake-up from the feed: read, and say once when reads start failing and when they work again. */
  function wake(): void {
    refresh().then(
      () => {
        if (failingSince === undefined) return;
        logger.info({ downMs: now() - failingSince }, 'revocation catch-up reads work again');
        failingSince = undefined;
      },
      (err: Error) => {
        if (failingSince !== undefined) return;
        failingSince = now();
        logger.warn({ err: err.message }, 'revocation catch-up failed; retrying every interval');
      },
    );
  }

  return {
    isSessionRevoked: (sessionId: string) => (sessions.get(sessionId) ?? 0) > now(),
    isIdentityTokenRevoked: (identityId: string, generation: number) => {
      const e = identities.get(identityId);
      return e !== undefined && e.expiresAt > now() && generation < e.minGeneration;
    },
    refresh,

    /**
     * Called for every identity event applied, a revocation or a change of its facts (caches of
     * identity facts drop their entry).
     */
    onIdentityRevoked(listener: (identityId: string, kind: RevocationKind) => void): void {
      identityListeners.push(listener);
    },

    /** Whether the feed is up: the LISTEN connection subscribed, or polling (a metrics gauge). */
    isListening: () => feed.state().subscribed,

    /** Called for every API session ended (logout, end of its grant): caches of sessions drop it. */
    onSessionRevoked(listener: (sessionId: string) => void): void {
      sessionListeners.push(listener);
    },

    /** The backend pid of the LISTEN connection (tests cut it to prove nothing is lost). */
    listenerPid: () => feed.state().backendPid,

    /** The change feed's mode and whether it is subscribed (health, metrics). */
    feedState: () => feed.state(),

    async start(): Promise<void> {
      await load();
      await feed.subscribe(wake);
    },

    async stop(): Promise<void> {
      await feed.close();
      await refreshing?.catch(() => undefined);
    },
  };
}

export type RevocationState = ReturnType<typeof createRevocationState>;
