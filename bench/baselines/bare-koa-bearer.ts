import Koa from 'koa';
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JWK } from 'jose';
import { requiredEnv, serveBaseline, serviceLikeHeaders } from './baseline-server.js';

/**
 * Baseline (a): the least a resource server must do for `GET /edge/client/v1/current-api-session`
 * with a bearer token: one RS256-2048 signature and the same claim checks as the service
 * (algorithm, `typ at+jwt`, issuer, audience, expiry), then a JSON body of the same shape.
 * Started by bench/run.ts with the public key of the bench's token signer.
 */

const PATH = '/edge/client/v1/current-api-session';
const keys = createLocalJWKSet({ keys: [JSON.parse(requiredEnv('BENCH_JWT_PUBLIC_JWK')) as JWK] });
const issuer = requiredEnv('BENCH_JWT_ISSUER');

function unauthorized(ctx: Koa.Context, error: string): void {
  ctx.status = 401;
  ctx.set('www-authenticate', `Bearer realm="svc-oidc", error="${error}"`);
  ctx.body = { error: { code: 'UNAUTHORIZED', message: error }, meta: { apiVersion: '1' } };
}

async function currentApiSession(ctx: Koa.Context): Promise<void> {
  if (ctx.method !== 'GET' || ctx.path !== PATH) {
    ctx.status = 404;
    ctx.body = { error: { code: 'NOT_FOUND' }, meta: { apiVersion: '1' } };
    return;
  }
  const token = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
  if (!token) return unauthorized(ctx, 'missing');
  let payload;
  try {
    ({ payload } = await jwtVerify(token, keys, {
      algorithms: ['RS256'],
      typ: 'at+jwt',
      issuer,
      audience: 'svc',
    }));
  } catch (err) {
    return unauthorized(ctx, err instanceof joseErrors.JWTExpired ? 'expired' : 'invalid');
  }
  const expiresAt = new Date(Number(payload.exp) * 1000);
  const seconds = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
  ctx.set('expiration-seconds', String(seconds));
  ctx.set('expires-at', expiresAt.toISOString());
  ctx.body = {
    data: {
      id: payload.z_asid,
      identityId: payload.sub,
      identity: { id: payload.sub, name: payload.sub },
      isAdmin: payload.z_ia === true,
      authMethod: 'oidc',
      amr: payload.amr ?? [],
      configTypes: payload.z_ct ?? [],
      isCertExtendable: payload.z_ice === true,
      isMfaRequired: false,
      expiresAt: expiresAt.toISOString(),
      expirationSeconds: seconds,
    },
    meta: {},
  };
}

await serveBaseline(() => {
  const app = new Koa();
  app.use(serviceLikeHeaders);
  app.use(currentApiSession);
  return app;
});
