import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from './create-database.js';

export type ChangeFeedMode = 'listen' | 'poll';

/** What health checks and metrics show of a feed. */
export interface ChangeFeedState {
  mode: ChangeFeedMode;
  /**
   * `listen`: the LISTEN connection is subscribed. `poll` (and the embedded database, which has no
   * other process to hear from): always true, there is nothing to lose.
   */
  subscribed: boolean;
  /** The server process id of the LISTEN connection, when there is one (tests cut it). */
  backendPid?: number;
  /** Times the LISTEN connection was lost and subscribed again since start. */
  resubscriptions: number;
}

/**
 * How a process learns that other processes wrote rows it keeps in memory. The feed carries no
 * data: `onWake` means "read what changed" and the subscriber reads it from the table, so a lost
 * wake-up costs at most one interval and nothing else. Wake-ups come from a timer every
 * `intervalMs` in every mode, plus — in `listen` mode — each NOTIFY on the channel and every
 * (re)subscription, which covers whatever was written while the connection was down.
 */
export interface ChangeFeed {
  readonly mode: ChangeFeedMode;
  subscribe(onWake: () => void): Promise<void>;
  state(): ChangeFeedState;
  close(): Promise<void>;
}

export interface ChangeFeedOptions {
  database: Database;
  mode: ChangeFeedMode;
  /** The NOTIFY channel (`listen` mode). */
  channel: string;
  intervalMs?: number;
  logger: Logger;
}

/** `poll`, or `listen` on PostgreSQL (the embedded database has no second process to listen to). */
export function createChangeFeed(o: ChangeFeedOptions): ChangeFeed {
  return o.mode === 'listen' && o.database.target.kind === 'pg' ? listenFeed(o) : pollFeed(o);
}

function ticker(intervalMs: number, onWake: () => void): { stop: () => void } {
  const timer = setInterval(onWake, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** The catch-up read alone: for engines without LISTEN/NOTIFY (CockroachDB, YugabyteDB). */
function pollFeed({ intervalMs = 1000 }: ChangeFeedOptions): ChangeFeed {
  let tick: { stop: () => void } | undefined;
  return {
    mode: 'poll',
    async subscribe(onWake) {
      tick = ticker(intervalMs, onWake);
    },
    state: () => ({ mode: 'poll', subscribed: true, resubscriptions: 0 }),
    async close() {
      tick?.stop();
    },
  };
}

/**
 * LISTEN on a connection of its own, outside the pool. When it drops (a database restart, a
 * network cut, the backend terminated) it is opened again every interval until it succeeds, and
 * each new subscription wakes the subscriber once for what it missed.
 */
function listenFeed({ database, channel, intervalMs = 1000, logger }: ChangeFeedOptions): ChangeFeed {
  if (database.target.kind !== 'pg') throw new Error('LISTEN needs PostgreSQL');
  const { connectionString } = database.target;
  let client: pg.Client | undefined;
  let closed = false;
  let tick: { stop: () => void } | undefined;
  let retry: NodeJS.Timeout | undefined;
  let subscriptions = 0;
  let lostSince: number | undefined;

  const scheduleRetry = (onWake: () => void) => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect(onWake);
    }, intervalMs);
    retry.unref();
  };

  async function connect(onWake: () => void): Promise<void> {
    if (closed) return;
    const c = new pg.Client({
      connectionString,
      application_name: 'svc-controller-listen',
      connectionTimeoutMillis: Math.max(intervalMs, 5000),
      keepAlive: true,
    });
    let lost = false;
    const onLost = (reason: string) => {
      if (lost) return;
      lost = true;
      if (client === c) client = undefined;
      if (closed) return;
      lostSince ??= Date.now();
      logger.warn({ reason }, 'change feed: LISTEN connection lost; subscribing again');
      void c.end().catch(() => undefined);
      scheduleRetry(onWake);
    };
    c.on('notification', () => onWake());
    c.on('error', (err) => onLost(err.message));
    c.on('end', () => onLost('connection ended'));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch (err) {
      onLost((err as Error).message);
      return;
    }
    if (lost) return;
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    subscriptions++;
    if (lostSince !== undefined) {
      logger.info({ downMs: Date.now() - lostSince }, 'change feed: LISTEN subscribed again');
      lostSince = undefined;
    }
    onWake(); // whatever was written while nobody listened
  }

  return {
    mode: 'listen',
    async subscribe(onWake) {
      tick = ticker(intervalMs, onWake);
      await connect(onWake);
    },
    state: () => ({
      mode: 'listen',
      subscribed: client !== undefined,
      backendPid: (client as unknown as { processID?: number } | undefined)?.processID,
      resubscriptions: Math.max(0, subscriptions - 1),
    }),
    async close() {
      closed = true;
      tick?.stop();
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
