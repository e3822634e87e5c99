import { createBenchClient } from './load/http-client.js';
import type { Operation } from './load/closed-loop.js';
import { passwordLogin, refreshGrant } from './load/oidc-flow.js';
import type { BenchUser, Target } from './targets/target.js';

/** One side of a scenario, ready to run: its workers keep their state (tokens) between runs. */
export interface PreparedSide {
  target: Target;
  workers: Operation[];
  close(): Promise<void>;
}

export interface Scenario {
  key: 'bearer' | 'login' | 'refresh';
  title: string;
  /** What one operation is, for the table. */
  unit: string;
  /** Upper bound of operations per second, used to bound a run by count as well as by time. */
  ceilingPerSecond: number;
  /** Run time of one measured run, full and `--quick`. */
  runMs: { full: number; quick: number };
}

export const BEARER_PATH = '/edge/client/v1/current-api-session';
export const BEARER_CONNECTIONS = 32;
export const FLOW_WORKERS = 8;

export const SCENARIOS: Scenario[] = [
  {
    key: 'bearer',
    title: `bearer GET current-api-session, ${BEARER_CONNECTIONS} conns`,
    unit: 'req',
    ceilingPerSecond: 50_000,
    runMs: { full: 8000, quick: 1000 },
  },
  {
    key: 'login',
    title: `full login (authz, login, 303, token), ${FLOW_WORKERS} workers`,
    unit: 'flow',
    ceilingPerSecond: 2000,
    runMs: { full: 10_000, quick: 1500 },
  },
  {
    key: 'refresh',
    title: `refresh grant with rotation, ${FLOW_WORKERS} workers`,
    unit: 'grant',
    ceilingPerSecond: 10_000,
    runMs: { full: 8000, quick: 1000 },
  },
];

/** Bearer requests: `tokens[i]` is used by every connection i mod n, all valid for the run. */
export function bearerSide(target: Target, tokens: string[]): PreparedSide {
  const client = createBenchClient(target.origin, target.ca, BEARER_CONNECTIONS);
  const workers = Array.from({ length: BEARER_CONNECTIONS }, (_, i): Operation => {
    const headers = { authorization: `Bearer ${tokens[i % tokens.length]}` };
    return async () => {
      const status = await client.getStatus(BEARER_PATH, headers);
      if (status !== 200) throw new Error(`bearer request: HTTP ${status}`);
    };
  });
  return { target, workers, close: () => client.close() };
}

/** Access tokens from the service itself, one real login per user (not measured). */
export async function loginTokens(target: Target, users: BenchUser[]): Promise<string[]> {
  const client = createBenchClient(target.origin, target.ca, 2);
  try {
    const tokens: string[] = [];
    for (const user of users) tokens.push((await passwordLogin(client, user)).accessToken);
    return tokens;
  } finally {
    await client.close();
  }
}

/** Full logins: worker i always logs in as user i, so no two workers share a user. */
export function loginSide(target: Target, users: BenchUser[]): PreparedSide {
  const client = createBenchClient(target.origin, target.ca, FLOW_WORKERS);
  const workers = Array.from({ length: FLOW_WORKERS }, (_, i): Operation => {
    const user = users[i % users.length]!;
    return async () => {
      await passwordLogin(client, user);
    };
  });
  return { target, workers, close: () => client.close() };
}

/**
 * Refresh grants: each worker owns one refresh-token chain (started by a login that is not
 * measured) and always presents the newest token, as a client must under rotation.
 */
export async function refreshSide(target: Target, users: BenchUser[]): Promise<PreparedSide> {
  const client = createBenchClient(target.origin, target.ca, FLOW_WORKERS);
  const workers: Operation[] = [];
  for (let i = 0; i < FLOW_WORKERS; i++) {
    let refreshToken = (await passwordLogin(client, users[i % users.length]!)).refreshToken;
    workers.push(async () => {
      refreshToken = (await refreshGrant(client, refreshToken)).refreshToken;
    });
  }
  return { target, workers, close: () => client.close() };
}
