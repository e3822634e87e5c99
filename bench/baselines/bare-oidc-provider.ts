import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import Provider from 'oidc-provider';
import { exportJWK, generateKeyPair } from 'jose';
import { hash, verify } from '@node-rs/argon2';
import pg from 'pg';
import { requiredEnv, serveBaseline, serviceLikeHeaders } from './baseline-server.js';
import { bareProviderConfiguration, DURATIONS } from './bare-provider-config.js';
import { createMemoryAdapterClass } from './memory-adapter.js';
import { createBaselineSchema, createPostgresAdapterClass, recordLogin } from './postgres-adapter.js';

/**
 * Baselines (b) and (c): a bare oidc-provider 9 under /oidc in Koa 3 with the cookie-less login of
 * docs/adr/0005-in-process-cookie-less-resume.md (the login POST finishes the interaction and is handed to
 * the provider's resume route in-process), one Argon2id verify per login at the service's
 * parameters. Started by bench/run.ts with the users to accept. (b) keeps everything in memory;
 * with BENCH_DATABASE_URL it is (c): the same provider on PostgreSQL through a minimal adapter,
 * writing per login the rows the service keeps (login facts and an API session included).
 */

const ARGON2 = { memoryCost: 19456, timeCost: 2, parallelism: 1 }; // src/crypto/passwords.ts
const MOUNT = '/oidc';
const LOGIN_PATH = `${MOUNT}/login/username`;

type Req = IncomingMessage & { originalUrl?: string };

const users = JSON.parse(requiredEnv('BENCH_USERS')) as Array<{ username: string; password: string }>;
const hashes = new Map<string, string>();
for (const u of users) hashes.set(u.username, await hash(u.password, ARGON2));
const dummyHash = await hash(randomBytes(16).toString('hex'), ARGON2);

const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
const privateJwk = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig' };
const cookieKeys = [randomBytes(32).toString('base64url')];

const databaseUrl = process.env.BENCH_DATABASE_URL;
// node-pg's default pool size, as the service's default `database.poolMax`.
const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 10 }) : undefined;
if (pool) await createBaselineSchema(pool);
const adapter = pool ? createPostgresAdapterClass(pool) : createMemoryAdapterClass();

/** offline_access is dropped without prompt=consent: added before the provider sees it. */
function withConsentPrompt(req: Req, query: URLSearchParams): void {
  const prompt = (query.get('prompt') ?? '').split(' ').filter(Boolean);
  if ((query.get('scope') ?? '').split(' ').includes('offline_access') && !prompt.includes('consent')) {
    query.set('prompt', [...prompt, 'consent'].join(' '));
    req.url = `${MOUNT}/authorization?${query}`;
  }
}

function createLogin(provider: Provider, resume: ReturnType<Provider['callback']>) {
  const resumeCookie = provider.cookieName('resume');
  const parseBody = koaBody({
    json: true,
    urlencoded: true,
    multipart: false,
    jsonLimit: '1mb',
    formLimit: '1mb',
  });
  return async function login(ctx: Koa.Context): Promise<void> {
    await parseBody(ctx, async () => undefined);
    const body = (ctx.request as unknown as { body: Record<string, string> }).body ?? {};
    const interaction = await provider.Interaction.find(String(body.authRequestId ?? ''));
    if (!interaction) {
      ctx.status = 400;
      ctx.body = { error: { code: 'INVALID_AUTH_REQUEST' } };
      return;
    }
    const stored = hashes.get(String(body.username));
    const ok = await verify(stored ?? dummyHash, String(body.password ?? '')).catch(() => false);
    if (!stored || !ok) {
      ctx.status = 401;
      ctx.body = { error: { code: 'INVALID_AUTH' } };
      return;
    }
    if (pool) await recordLogin(pool, String(body.username), DURATIONS.session);
    interaction.result = { login: { accountId: String(body.username), amr: ['pwd'] }, consent: {} };
    await interaction.persist();
    // Option D: the same request becomes GET /oidc/authorization/<uid> with a signed resume cookie.
    const path = new URL(interaction.returnTo).pathname;
    const sig = createHmac('sha1', cookieKeys[0]!)
      .update(`${resumeCookie}=${interaction.uid}`)
      .digest('base64url');
    const req = ctx.req as Req;
    req.headers.cookie = `${resumeCookie}=${interaction.uid}; ${resumeCookie}.sig=${sig}`;
    req.method = 'GET';
    delete req.headers['content-type'];
    delete req.headers['content-length'];
    req.originalUrl = path;
    req.url = path.slice(MOUNT.length);
    ctx.respond = false;
    await resume(req, ctx.res);
  };
}

await serveBaseline((origin) => {
  const provider = new Provider(
    `${origin}${MOUNT}`,
    bareProviderConfiguration({ privateJwk, cookieKeys, accounts: new Set(hashes.keys()), adapter }),
  );
  const dispatch = provider.callback();
  const login = createLogin(provider, dispatch);
  const app = new Koa();
  app.use(serviceLikeHeaders);
  app.use(async (ctx) => {
    if (ctx.method === 'POST' && ctx.path === LOGIN_PATH) return login(ctx);
    if (!ctx.path.startsWith(`${MOUNT}/`)) {
      ctx.status = 404;
      return;
    }
    const req = ctx.req as Req;
    if (ctx.method === 'GET' && ctx.path === `${MOUNT}/authorization`) {
      withConsentPrompt(req, new URLSearchParams(ctx.querystring));
    }
    // The provider derives its mount path from originalUrl minus url.
    req.originalUrl = req.url;
    req.url = req.url!.slice(MOUNT.length) || '/';
    ctx.respond = false;
    await dispatch(req, ctx.res);
  });
  return app;
});
