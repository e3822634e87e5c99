import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { READY_LINE } from '../baselines/baseline-server.js';
import type { TlsMaterial } from '../baselines/baseline-tls.js';
import { processCpuMs } from '../proc-cpu.js';
import { spawnTsChild } from './child-process.js';
import { createBenchDatabase, type BenchDatabase } from './postgres-database.js';
import type { BenchUser, Target } from './target.js';

const START_TIMEOUT_MS = 120_000;
export const BEARER_BASELINE_ISSUER = 'https://127.0.0.1:1280/oidc';

async function startBaseline(
  label: string,
  file: string,
  tls: TlsMaterial,
  env: Record<string, string>,
  nodeArgs: string[],
  /** Baseline (c)'s database: its backends' CPU and statements count for it, and it is dropped on stop. */
  db?: BenchDatabase,
): Promise<Target> {
  const child = spawnTsChild(
    join(process.cwd(), 'bench', 'baselines', file),
    {
      BENCH_TLS_CERT: tls.certPem,
      BENCH_TLS_KEY: tls.keyPem,
      ...env,
      ...(db ? { BENCH_DATABASE_URL: db.url } : {}),
    },
    process.cwd(),
    nodeArgs,
  );
  try {
    const [, port] = await child.waitForLine(READY_LINE, START_TIMEOUT_MS);
    return {
      label,
      origin: `https://127.0.0.1:${port}`,
      ca: tls.certPem,
      async cpu() {
        const ms = await processCpuMs(child.pid);
        if (ms === undefined) throw new Error(`${label} is gone: ${child.output()}`);
        if (!db) return { totalMs: ms, databaseMs: 0 };
        const databaseMs = await db.backendsCpuMs();
        return { totalMs: ms + databaseMs, databaseMs, statements: db.statements() };
      },
      stop: () => child.stop(),
    };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

export interface BearerBaseline {
  target: Target;
  /** An access token shaped like the service's (RS256-2048, `typ at+jwt`, the same claims). */
  mintAccessToken(user: BenchUser): Promise<string>;
}

/** Baseline (a): the bench holds the signing key; the server gets only the public JWK. */
export async function startBearerBaseline(
  tls: TlsMaterial,
  nodeArgs: string[] = [],
): Promise<BearerBaseline> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', {
    modulusLength: 2048,
    extractable: true,
  });
  const kid = 'bench-key';
  const target = await startBaseline(
    'baseline (a)',
    'bare-koa-bearer.ts',
    tls,
    {
      BENCH_JWT_PUBLIC_JWK: JSON.stringify({
        ...(await exportJWK(publicKey)),
        kid,
        alg: 'RS256',
        use: 'sig',
      }),
      BENCH_JWT_ISSUER: BEARER_BASELINE_ISSUER,
    },
    nodeArgs,
  );
  return { target, mintAccessToken: (user) => mint(privateKey, kid, user) };
}

/** 16-character ids like the service's (a token of the same size costs the same to parse). */
const idOf = (seed: string) => createHash('sha256').update(seed).digest('base64url').slice(0, 16);

function mint(key: CryptoKey, kid: string, user: BenchUser): Promise<string> {
  return new SignJWT({
    amr: ['pwd'],
    auth_time: Math.floor(Date.now() / 1000),
    z_asid: idOf(`session ${user.username}`),
    z_ia: false,
    z_ct: [],
    z_t: 'a',
    z_ice: false,
    z_gen: 0,
    scope: 'openid offline_access',
    client_id: 'svc',
  })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid })
    .setSubject(idOf(user.username))
    .setJti(randomBytes(32).toString('base64url'))
    .setIssuedAt()
    .setExpirationTime('30m')
    .setIssuer(BEARER_BASELINE_ISSUER)
    .setAudience('svc')
    .sign(key);
}

/** Baseline (b): the bare provider in memory, told the same users as the service. */
export function startOidcBaseline(
  tls: TlsMaterial,
  users: BenchUser[],
  nodeArgs: string[] = [],
): Promise<Target> {
  return startBaseline(
    'baseline (b)',
    'bare-oidc-provider.ts',
    tls,
    { BENCH_USERS: JSON.stringify(users) },
    nodeArgs,
  );
}

export interface PostgresOidcBaseline extends Target {
  /** Vacuums (c)'s database, between scenarios, as the service's is. */
  settle(): Promise<void>;
}

/**
 * Baseline (c): the same bare provider on its own fresh PostgreSQL database
 * (`svc_bench_c_<random>`), reached through a statement-counting relay as the service's is.
 */
export async function startPostgresOidcBaseline(
  tls: TlsMaterial,
  users: BenchUser[],
  nodeArgs: string[],
  /** Receives the cleanup before anything is created, so an interrupted start leaves nothing behind. */
  onCleanup: (cleanup: () => Promise<void>) => void,
): Promise<PostgresOidcBaseline> {
  let db: BenchDatabase | undefined;
  let target: Target | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await target?.stop();
      await db?.drop().catch(() => undefined);
    })());
  onCleanup(cleanup);
  try {
    db = await createBenchDatabase('svc_bench_c');
    target = await startBaseline(
      'baseline (c)',
      'bare-oidc-provider.ts',
      tls,
      { BENCH_USERS: JSON.stringify(users) },
      nodeArgs,
      db,
    );
    const database = db;
    return { ...target, settle: () => database.vacuum(), stop: cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
