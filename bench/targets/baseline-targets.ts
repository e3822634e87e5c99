import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { READY_LINE } from '../baselines/baseline-server.js';
import type { TlsMaterial } from '../baselines/baseline-tls.js';
import { processCpuMs } from '../proc-cpu.js';
import { spawnTsChild } from './child-process.js';
import type { BenchUser, Target } from './target.js';

const START_TIMEOUT_MS = 120_000;
export const BEARER_BASELINE_ISSUER = 'https://127.0.0.1:1280/oidc';

async function startBaseline(
  label: string,
  file: string,
  tls: TlsMaterial,
  env: Record<string, string>,
  nodeArgs: string[],
): Promise<Target> {
  const child = spawnTsChild(
    join(process.cwd(), 'bench', 'baselines', file),
    { BENCH_TLS_CERT: tls.certPem, BENCH_TLS_KEY: tls.keyPem, ...env },
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
        return { totalMs: ms, databaseMs: 0 };
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

/** Baseline (b): the bare provider, told the same users as the service. */
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
