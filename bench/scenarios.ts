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
  key: 'bearer' | 'current-identity' | 'legacy' | 'login' | 'refresh';
  title: string;
  /** What one operation is, for the table. */
  unit: string;
  /** Upper bound of operations per second, used to bound a run by count as well as by time. */
  ceilingPerSecond: number;
  /** Run time of one measured run, full and `--quick`. */
  runMs: { full: number; quick: number };
}

export const BEARER_PATH = '/edge/client/v1/current-api-session';
export const CURRENT_IDENTITY_PATH = '/edge/client/v1/current-identity';
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
    // Against the same baseline: what a client calls to learn who it is, beside the least a
    // resource server does per bearer request.
    key: 'current-identity',
    title: `bearer GET current-identity, ${BEARER_CONNECTIONS} conns`,
    unit: 'req',
    ceilingPerSecond: 50_000,
    runMs: { full: 8000, quick: 1000 },
  },
  {
    // The legacy `svc-session` token against the same bearer baseline, to set beside the bearer figure.
    key: 'legacy',
    title: `svc-session GET current-api-session, ${BEARER_CONNECTIONS} conns`,
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

/** Token-authenticated GETs: `headers[i]` is used by every connection i mod n, all valid for the run. */
function tokenSide(target: Target, path: string, headers: Record<string, string>[]): PreparedSide {
  const client = createBenchClient(target.origin, target.ca, BEARER_CONNECTIONS);
  const workers = Array.from({ length: BEARER_CONNECTIONS }, (_, i): Operation => {
    const h = headers[i % headers.length]!;
    return async () => {
      const status = await client.getStatus(path, h);
      if (status !== 200) throw new Error(`GET ${path}: HTTP ${status}`);
    };
  });
  return { target, workers, close: () => client.close() };
}

/** Bearer requests to `path` (by default `current-api-session`). */
export function bearerSide(target: Target, tokens: string[], path = BEARER_PATH): PreparedSide {
  return tokenSide(
    target,
    path,
    tokens.map((t) => ({ authorization: `Bearer ${t}` })),
  );
}

/** Legacy requests: `current-api-session` with a `svc-session` token. */
export function legacySide(target: Target, sessionTokens: string[]): PreparedSide {
  return tokenSide(
    target,
    BEARER_PATH,
    sessionTokens.map((t) => ({ 'svc-session': t })),
  );
}

/** Legacy `svc-session` tokens from the service, one password authentication per user (not measured). */
export async function legacySessionTokens(target: Target, users: BenchUser[]): Promise<string[]> {
  const client = createBenchClient(target.origin, target.ca, 2);
  try {
    const tokens: string[] = [];
    for (const { username, password } of users) {
      const res = await client.postJson('/edge/client/v1/authenticate?method=password', {
        username,
        password,
      });
      if (res.status !== 200) throw new Error(`legacy authenticate: HTTP ${res.status}`);
      tokens.push((JSON.parse(res.text) as { data: { token: string } }).data.token);
    }
    return tokens;
  } finally {
    await client.close();
  }
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
