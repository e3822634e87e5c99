import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/create-database.js';
import { revocationsRepository, type Revocation } from '../repositories/revocations-repository.js';

export const REVOCATION_CHANNEL = 'svc_revocations';

// Commits can land out of id order; rows this recent are read again and deduplicated by id.
const RESCAN_MS = 60_000;

interface Entry {
  /** Tokens of the identity with a generation below this are refused; Infinity = deleted. */
  minGeneration: number;
  expiresAt: number;
}

export interface RevocationStateDeps {
  database: Database;
  logger: Logger;
  pollMs?: number;
  now?: () => number;
}

/**
 * The revocations every process must know without a database read per request (decisions §6,
 * issue 6): API sessions ended and identities whose tokens were invalidated. Kept current by
 * PostgreSQL LISTEN/NOTIFY plus a catch-up read every `pollMs` (1 s), so a lost notification or a
 * dropped listener connection delays a revocation by at most that long.
 */
export function createRevocationState({
  database,
  logger,
  pollMs = 1000,
  now = Date.now,
}: RevocationStateDeps) {
  const sessions = new Map<string, number>();
  const identities = new Map<string, Entry>();
  const seen = new Map<number, number>();
  const identityListeners: ((identityId: string) => void)[] = [];
  let maxId = 0;
  let timer: NodeJS.Timeout | undefined;
  let listener: pg.Client | undefined;
  let stopped = false;
  let refreshing: Promise<void> | undefined;

  const apply = (r: Revocation) => {
    if (seen.has(r.id)) return;
    seen.set(r.id, now());
    maxId = Math.max(maxId, r.id);
    const expiresAt = r.expiresAt.getTime();
    if (r.kind === 'api_session') sessions.set(r.subject, Math.max(sessions.get(r.subject) ?? 0, expiresAt));
    if (r.kind === 'identity') {
      for (const listener of identityListeners) listener(r.subject);
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
    for (const [id, at] of seen) if (at < t - 2 * RESCAN_MS) seen.delete(id);
  };

  async function readNow(): Promise<void> {
    const rows = await revocationsRepository.listRecent(
      database.knex,
      maxId,
      new Date(now()),
      new Date(now() - RESCAN_MS),
    );
    rows.forEach(apply);
    prune();
  }

  /** Single-flight catch-up read. */
  function refresh(): Promise<void> {
    refreshing ??= readNow().finally(() => (refreshing = undefined));
    return refreshing;
  }

  async function listen(): Promise<void> {
    if (database.target.kind !== 'pg' || stopped) return;
    const client = new pg.Client({ connectionString: database.target.connectionString });
    client.on('notification', () => void refresh().catch(() => undefined));
    client.on('error', (err) => logger.warn({ err: err.message }, 'revocation listener lost; reconnecting'));
    client.on('end', () => {
      if (listener === client) listener = undefined;
      if (!stopped) setTimeout(() => void listen().catch(() => undefined), pollMs).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${REVOCATION_CHANNEL}`);
    listener = client;
    await refresh(); // whatever happened while we were not listening
  }

  return {
    isSessionRevoked: (sessionId: string) => (sessions.get(sessionId) ?? 0) > now(),
    isIdentityTokenRevoked: (identityId: string, generation: number) => {
      const e = identities.get(identityId);
      return e !== undefined && e.expiresAt > now() && generation < e.minGeneration;
    },
    refresh,

    /** Called for every identity revocation applied (caches of identity facts drop their entry). */
    onIdentityRevoked(listener: (identityId: string) => void): void {
      identityListeners.push(listener);
    },

    /** The backend pid of the LISTEN connection (tests cut it to prove nothing is lost). */
    listenerPid: () => (listener as unknown as { processID?: number } | undefined)?.processID,

    async start(): Promise<void> {
      await refresh();
      await listen().catch((err) => logger.warn({ err: err.message }, 'revocation listener failed to start'));
      timer = setInterval(
        () => void refresh().catch((err) => logger.warn({ err: err.message }, 'revocation catch-up failed')),
        pollMs,
      );
      timer.unref();
    },

    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await refreshing?.catch(() => undefined);
      await listener?.end().catch(() => undefined);
    },
  };
}

export type RevocationState = ReturnType<typeof createRevocationState>;
