import { MAX_CONFIG_TYPE_LENGTH, MAX_CONFIG_TYPES } from '../schemas/authenticate-schemas.js';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { CONTROL_REASON, isForbidden } from '../schemas/safe-text.js';
import { CLIENT_ID } from './create-provider.js';
import { prefillUserCode } from './device-flow.js';
import type { IssuerEntry, IssuerRegistry } from './issuer-registry.js';
import { OIDC_MOUNT } from './login-paths.js';
import type { RefreshSecondFactor } from './refresh-second-factor.js';
import { withoutCookie } from './resume-in-process.js';

const ROOT_DISCOVERY = '/.well-known/openid-configuration';
const DEVICE_AUTHORIZATION = `${OIDC_MOUNT}/device/auth`;
const CODE_VERIFICATION = `${OIDC_MOUNT}/device`;
/**
 * The provider endpoints we expose and their methods; everything else under /oidc is ours or a
 * JSON 404, and a wrong method a JSON 405 (the provider itself would answer text/plain). The
 * template names the endpoint in metrics, never the raw path.
 */
const PROVIDER_ROUTES: [RegExp, string[], string][] = [
  [/^\/oidc\/authorization$/, ['GET', 'HEAD'], '/oidc/authorization'],
  [/^\/oidc\/authorization\/[A-Za-z0-9_-]{1,128}$/, ['GET', 'HEAD'], '/oidc/authorization/:uid'],
  [/^\/oidc\/token$/, ['POST'], '/oidc/token'],
  [/^\/oidc\/revoke$/, ['POST'], '/oidc/revoke'],
  [/^\/oidc\/device\/auth$/, ['POST'], '/oidc/device/auth'],
  [/^\/oidc\/device$/, ['GET', 'HEAD', 'POST'], '/oidc/device'],
  [/^\/oidc\/keys$/, ['GET', 'HEAD'], '/oidc/keys'],
  [/^\/oidc\/\.well-known\/openid-configuration$/, ['GET', 'HEAD'], '/oidc/.well-known/openid-configuration'],
  [
    /^\/oidc\/\.well-known\/oauth-authorization-server$/,
    ['GET', 'HEAD'],
    '/oidc/.well-known/oauth-authorization-server',
  ],
];

/** The provider endpoint's template for metrics, before anything (a rate limit) answers. */
function providerTemplateOf(path: string): string | undefined {
  if (path === ROOT_DISCOVERY) return ROOT_DISCOVERY;
  return PROVIDER_ROUTES.find(([pattern]) => pattern.test(path))?.[2];
}

function checkProviderRoute(ctx: Context): void {
  const route = PROVIDER_ROUTES.find(([path]) => path.test(ctx.path));
  if (!route) throw new AppError('NOT_FOUND', { message: `no resource at ${ctx.method} ${ctx.path}` });
  if (!route[1].includes(ctx.method)) {
    throw new AppError('METHOD_NOT_ALLOWED', { headers: { allow: route[1].join(', ') } });
  }
}

/** The issuer picked for this request (set before our /oidc routes run). */
export function issuerEntryOf(ctx: Context): IssuerEntry {
  const entry = ctx.state.oidcIssuer as IssuerEntry | undefined;
  if (!entry) throw new AppError('NOT_FOUND');
  return entry;
}

function oauthError(ctx: Context, description: string): void {
  ctx.status = 400;
  ctx.body = { error: 'invalid_request', error_description: description };
}

/**
 * Authorization and device authorization requests are adjusted BEFORE the provider sees them (never inside
 * `provider.use`: rewriting the query there loses the `/oidc` mount path and the resume 404s): repeated
 * `configTypes` become one `svc_ct` parameter (the provider refuses repeated parameters), and
 * `offline_access` of the first-party client gets `consent` appended to `prompt`, without which the
 * provider drops it. Answers the error, or undefined when the parameters were adjusted in place.
 */
function rewriteAuthorizationParams(params: URLSearchParams): string | undefined {
  const configTypes = params.getAll('configTypes');
  params.delete('configTypes');
  params.delete('svc_ct');
  if (configTypes.length > MAX_CONFIG_TYPES || configTypes.some((t) => t.length > MAX_CONFIG_TYPE_LENGTH)) {
    return `configTypes: at most ${MAX_CONFIG_TYPES} values of at most ${MAX_CONFIG_TYPE_LENGTH} characters`;
  }
  if (configTypes.length > 0) params.set('svc_ct', JSON.stringify(configTypes));
  const scopes = params.getAll('scope');
  const prompts = params.getAll('prompt');
  if (params.get('client_id') === CLIENT_ID && scopes.length === 1 && prompts.length <= 1) {
    const prompt = (prompts[0] ?? '').split(' ').filter(Boolean);
    if (
      scopes[0]!.split(' ').includes('offline_access') &&
      !prompt.includes('none') &&
      !prompt.includes('consent')
    ) {
      params.set('prompt', [...prompt, 'consent'].join(' '));
    }
  }
  return undefined;
}

/** The authorization endpoint's query, adjusted; false when the request was answered with an error. */
function rewriteAuthorizationQuery(ctx: Context): boolean {
  const params = new URLSearchParams(ctx.querystring);
  const error = rewriteAuthorizationParams(params);
  if (error) {
    oauthError(ctx, error);
    return false;
  }
  const query = params.toString();
  ctx.req.url = `${ctx.path}${query ? `?${query}` : ''}`;
  return true;
}

/**
 * The provider's own limit on form bodies (56 KiB in oidc-provider 9.13.3): a body we hand on is
 * never one the provider would have refused for its size, and one over it is refused here alike.
 */
const MAX_FORM_BYTES = 56 * 1024;

async function readForm(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req) {
    received += (chunk as Buffer).length;
    if (received > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, received);
}

/**
 * The query check of the authorization endpoint (`checkQuery`), for a form body: the provider
 * stores the parameters with the device code, and PostgreSQL refuses NUL in jsonb.
 */
function controlCharacterIn(params: URLSearchParams): string | undefined {
  for (const [name, value] of params) {
    if (isForbidden(name)) return `parameter names ${CONTROL_REASON}`;
    if (isForbidden(value)) return `${name} ${CONTROL_REASON}`;
  }
  return undefined;
}

/**
 * The device authorization request (RFC 8628 §3.1) gets the authorization endpoint's adjustments in
 * its form body. The rewritten body is handed on as the request's stream: the provider (9.13.3)
 * reads a form body by iterating the request stream itself, not from a body parser before it, so a
 * replaced stream is what it parses; a body it cannot read it refuses as `invalid_request`, as it
 * would have. Other content types go through untouched (the provider
 * refuses them). False when the request was answered with an error.
 */
async function rewriteDeviceAuthorizationBody(ctx: Context): Promise<boolean> {
  if (!ctx.is('application/x-www-form-urlencoded')) return true;
  const raw = await readForm(ctx.req);
  if (raw === undefined) {
    ctx.status = 413;
    ctx.body = { error: 'invalid_request', error_description: 'request entity too large' };
    return false;
  }
  const params = new URLSearchParams(raw.toString('utf8'));
  const error = controlCharacterIn(params) ?? rewriteAuthorizationParams(params);
  if (error) {
    oauthError(ctx, error);
    return false;
  }
  const body = Buffer.from(params.toString(), 'utf8');
  const req = ctx.req;
  req.headers['content-length'] = String(body.length);
  delete req.headers['transfer-encoding'];
  Object.defineProperty(req, 'readable', { value: true, configurable: true });
  Object.defineProperty(req, 'iterator', {
    configurable: true,
    value: async function* () {
      yield body;
    },
  });
  return true;
}

/**
 * `verification_uri_complete` (`GET /oidc/device?user_code=…`): the code goes to our code form,
 * prefilled, instead of the provider's page that would post it by script.
 */
function takeUserCode(ctx: Context): void {
  const params = new URLSearchParams(ctx.querystring);
  const userCode = params.get('user_code');
  if (userCode === null) return;
  params.delete('user_code');
  prefillUserCode(ctx.req, userCode);
  const query = params.toString();
  ctx.req.url = `${ctx.path}${query ? `?${query}` : ''}`;
}

type TokenRequests = Pick<RefreshSecondFactor, 'takeBearerValues'>;

async function dispatch(ctx: Context, entry: IssuerEntry, tokenRequests: TokenRequests): Promise<void> {
  const req = ctx.req as typeof ctx.req & { originalUrl?: string };
  // The provider's session reaches it only behind the device code form, which keeps its XSRF
  // secret there (docs/adr/0005-in-process-cookie-less-resume.md).
  const passSessionCookie = ctx.path === CODE_VERIFICATION;
  if (ctx.path === ROOT_DISCOVERY) {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new AppError('METHOD_NOT_ALLOWED', { headers: { allow: 'GET, HEAD' } });
    }
    // Same document as /oidc/.well-known/…: originalUrl keeps the /oidc prefix on every endpoint.
    req.originalUrl = `${OIDC_MOUNT}${ROOT_DISCOVERY}`;
    req.url = ROOT_DISCOVERY;
  } else {
    checkProviderRoute(ctx);
    if (ctx.path === `${OIDC_MOUNT}/authorization` && ctx.method === 'GET' && !rewriteAuthorizationQuery(ctx))
      return;
    if (ctx.path === DEVICE_AUTHORIZATION && !(await rewriteDeviceAuthorizationBody(ctx))) return;
    if (ctx.path === CODE_VERIFICATION && ctx.method !== 'POST') takeUserCode(ctx);
    // Bearer values at the token endpoint are the secondary external JWT, never client authentication.
    if (ctx.path === `${OIDC_MOUNT}/token`) tokenRequests.takeBearerValues(req);
    req.originalUrl = req.url;
    req.url = req.url!.slice(OIDC_MOUNT.length) || '/';
  }
  if (!passSessionCookie) {
    const cookie = withoutCookie(req.headers.cookie, entry.sessionCookieName);
    if (cookie === undefined) delete req.headers.cookie;
    else req.headers.cookie = cookie;
  }
  ctx.respond = false;
  await entry.callback(req, ctx.res);
}

/**
 * Everything under /oidc and the root discovery document (mounted only on listeners with `edge-oidc`). The
 * issuer is picked by the Host header among the addresses of the listener that accepted the connection;
 * other hosts get a JSON 404 (docs/operations.md). Our own routes run first, then the provider.
 */
export function createOidcDispatch(
  registry: IssuerRegistry,
  ours: Middleware,
  tokenRequests: TokenRequests,
): Middleware {
  return async function oidcDispatch(ctx: Context, next: Next) {
    const inOidc = ctx.path === OIDC_MOUNT || ctx.path.startsWith(`${OIDC_MOUNT}/`);
    if (!inOidc && ctx.path !== ROOT_DISCOVERY) return next();
    const entry = registry.pick(ctx.state.listener, ctx.req.headers.host);
    if (!entry) throw new AppError('NOT_FOUND', { message: 'no OIDC issuer is served at this address' });
    ctx.state.oidcIssuer = entry;
    ctx.state.routeTemplate = providerTemplateOf(ctx.path);
    await ours(ctx, () => dispatch(ctx, entry, tokenRequests));
  };
}
