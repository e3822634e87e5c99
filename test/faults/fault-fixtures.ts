import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oc from 'openid-client';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME } from '../helpers/test-server.js';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';
import { followToCallback, startAuthorization, submitLogin } from '../helpers/oidc-client.js';

/** `npm run soak` runs the same tests with bigger counts and longer phases. */
export const SCALE = Math.max(1, Number(process.env.FAULT_SCALE ?? 1));

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One controller process of a deployment whose clients all use one shared address (`front`), as
 * behind a TCP proxy: `client` and `oidc` reach this process only, with the shared Host and issuer.
 */
export interface Instance {
  name: string;
  process: SpawnedController;
  /** Edge and OIDC endpoints through this process, Host = the shared address. */
  client: HttpsClient;
  /** openid-client, configured by discovery through this process. */
  oidc: oc.Configuration;
  /** Set by the test before it kills the process: its failures are then expected. */
  dead: boolean;
  close(): Promise<void>;
}

export interface InstanceOptions {
  databaseUrl: string;
  /** The shared address clients use: every instance advertises it. */
  frontPort: number;
  env?: Record<string, string>;
}

export async function startInstance(name: string, o: InstanceOptions): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), `svc-fault-${name}-`));
  const proc = await spawnController({
    DATABASE_URL: o.databaseUrl,
    SVC_DATA_DIR: dataDir,
    SVC_ADVERTISED_ADDRESS: `127.0.0.1:${o.frontPort}`,
    SVC_RATE_LIMITS_ENABLED: 'false',
    ...o.env,
  });
  try {
    await waitListening(proc);
  } catch (err) {
    proc.child.kill('SIGKILL');
    throw err;
  }
  const ca = proc.ca();
  const front = `https://127.0.0.1:${o.frontPort}`;
  const client = createHttpsClient(front, { ca, connectPort: proc.port });
  const connector = buildConnector({ ca });
  const agent = new Agent({
    connect: (opts, callback) => connector({ ...opts, port: String(proc.port) }, callback),
  });
  const customFetch: oc.CustomFetch = (url, options) =>
    undiciFetch(url, { ...(options as object), dispatcher: agent }) as unknown as Promise<Response>;
  const oidc = await oc.discovery(new URL(`${front}/oidc`), 'svc', undefined, oc.None(), {
    [oc.customFetch]: customFetch,
  });
  const instance: Instance = {
    name,
    process: proc,
    client,
    oidc,
    dead: false,
    async close() {
      await client.close().catch(() => undefined);
      await agent.close().catch(() => undefined);
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const exited = await Promise.race([
          proc.exited.then(() => true),
          new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 15_000))),
        ]);
        clearTimeout(timer);
        if (!exited) proc.child.kill('SIGKILL');
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return instance;
}

/** SIGKILL, and wait until the process is gone. */
export async function killHard(instance: Instance): Promise<void> {
  instance.dead = true;
  instance.process.child.kill('SIGKILL');
  await instance.process.exited;
}

/** A legacy admin session token (valid on every instance: sessions live in the database). */
export async function adminSession(instance: Instance): Promise<string> {
  const res = await instance.client.post('/edge/management/v1/authenticate?method=password', {
    body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
  });
  if (res.status !== 200) throw new Error(`admin login failed: ${res.status} ${res.text}`);
  return res.body.data.token as string;
}

export interface Tokens {
  access: string;
  refresh: string;
}

/** An authorization request started (PKCE, state, nonce) and not yet answered. */
export type Started = Awaited<ReturnType<typeof startAuthorization>>;

/** The password step of a started login, through `via`; returns the callback URL with its code. */
export async function passwordStep(
  via: Instance,
  started: Started,
  username = ADMIN_USERNAME,
  password = ADMIN_PASSWORD,
): Promise<URL> {
  const login = await submitLogin(via.client, started, { body: { username, password } });
  const callback = await followToCallback(via.client, login, started.redirectUri);
  return new URL(callback.location);
}

/** The code exchange by openid-client through `via` (it checks state, nonce, iss and the ID token). */
export async function redeem(via: Instance, started: Started, callback: URL): Promise<Tokens> {
  const tokens = await oc.authorizationCodeGrant(via.oidc, callback, {
    pkceCodeVerifier: started.pkce.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  return { access: tokens.access_token, refresh: tokens.refresh_token! };
}

export async function refresh(via: Instance, refreshToken: string): Promise<Tokens> {
  const tokens = await oc.refreshTokenGrant(via.oidc, refreshToken);
  return { access: tokens.access_token, refresh: tokens.refresh_token! };
}

/** A whole PKCE login whose steps may each go to another instance. */
export async function login(
  steps: [Instance, Instance, Instance],
  username = ADMIN_USERNAME,
  password = ADMIN_PASSWORD,
): Promise<Tokens> {
  const started = await startAuthorization(steps[0].client, { method: 'password' });
  const callback = await passwordStep(steps[1], started, username, password);
  return redeem(steps[2], started, callback);
}

/** A bearer call of the client API; returns the status. */
export async function bearerStatus(via: Instance, accessToken: string): Promise<number> {
  const res = await via.client.get('/edge/client/v1/current-identity', {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  return res.status;
}
