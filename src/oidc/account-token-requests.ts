import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { AppError } from '../errors/app-error.js';
import type { TokenSet } from '../services/account/account-session-service.js';
import { CLIENT_ID } from './create-provider.js';
import type { IssuerEntry, IssuerRegistry, ListenerAddresses } from './issuer-registry.js';
import { OIDC_MOUNT } from './login-paths.js';
import { accountCallbackUri } from '../config/uri-patterns.js';

/**
 * The connection the provider sees for the account page's own token request: the browser's, as
 * far as it matters to a token request (its address for the log and rate limits; its client
 * certificate, so that a grant bound to the certificate the person logged in with stays bound).
 * It can neither be read from nor written to: the request has no socket of its own.
 */
function connectionOf(browser: Socket | undefined): Socket {
  const tls = browser as Partial<TLSSocket> | undefined;
  return {
    encrypted: true,
    readable: false,
    writable: false,
    destroyed: false,
    remoteAddress: browser?.remoteAddress ?? '127.0.0.1',
    remotePort: browser?.remotePort,
    remoteFamily: browser?.remoteFamily,
    getPeerX509Certificate: () => tls?.getPeerX509Certificate?.(),
    getPeerCertificate: (detailed?: boolean) => tls?.getPeerCertificate?.(detailed) ?? {},
    on: () => undefined,
    once: () => undefined,
    removeListener: () => undefined,
    destroy: () => undefined,
    setTimeout: () => undefined,
  } as unknown as Socket;
}

/**
 * POSTs a form to the provider's token endpoint of `entry` inside this process
 * (docs/adr/0014-account-page.md): a request object with the body, handed to the provider's own
 * handler as the dispatcher hands it a request from the network, and its answer collected. Nothing
 * goes over the network, so no address, certificate or PROXY header of our own is involved, and
 * the provider runs exactly its token endpoint code (client, PKCE, code or refresh token, grant).
 */
async function postToTokenEndpoint(
  entry: IssuerEntry,
  form: Record<string, string>,
  browser: Socket | undefined,
): Promise<{ status: number; body: unknown }> {
  const payload = Buffer.from(new URLSearchParams(form).toString(), 'utf8');
  const req = new IncomingMessage(connectionOf(browser)) as IncomingMessage & { originalUrl?: string };
  req.method = 'POST';
  req.url = '/token';
  req.originalUrl = `${OIDC_MOUNT}/token`;
  req.httpVersion = '1.1';
  req.headers = {
    host: entry.address,
    'content-type': 'application/x-www-form-urlencoded',
    'content-length': String(payload.length),
    accept: 'application/json',
  };
  req.push(payload);
  req.push(null);
  req.complete = true;
  const res = new ServerResponse(req);
  const chunks: Buffer[] = [];
  const answered = new Promise<void>((resolve) => {
    res.write = ((chunk: unknown) => {
      if (chunk) chunks.push(Buffer.from(chunk as string));
      return true;
    }) as typeof res.write;
    res.end = ((chunk: unknown) => {
      if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk as string));
      resolve();
      return res;
    }) as typeof res.end;
  });
  await entry.callback(req, res);
  await answered;
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, body };
}

function tokenSetOf(answer: { status: number; body: unknown }): TokenSet {
  const b = (answer.body ?? {}) as Record<string, unknown>;
  if (answer.status === 503) throw new AppError('SERVICE_UNAVAILABLE');
  if (
    answer.status !== 200 ||
    typeof b.access_token !== 'string' ||
    typeof b.refresh_token !== 'string' ||
    typeof b.expires_in !== 'number'
  ) {
    // invalid_grant and friends: the code or refresh token is no longer good (the reason is the
    // provider's, and stays out of the page: it may name the grant).
    throw new AppError('ACCOUNT_SIGN_IN_FAILED');
  }
  return {
    accessToken: b.access_token,
    refreshToken: b.refresh_token,
    idToken: typeof b.id_token === 'string' ? b.id_token : undefined,
    expiresIn: b.expires_in,
  };
}

/** The account page's side of the OIDC provider: which issuer serves it, and its token requests. */
export function createAccountTokenRequests(registry: IssuerRegistry) {
  const entryAt = (address: string): IssuerEntry => {
    const entry = registry.entries().find((e) => e.address.toLowerCase() === address.toLowerCase());
    if (!entry) throw new AppError('ACCOUNT_SIGN_IN_FAILED');
    return entry;
  };
  return {
    /**
     * The issuer of a request's listener and Host: its address, authorization endpoint and the
     * account page's callback there (the one redirect URI that issuer adds for the page).
     */
    issuerAt(listener: ListenerAddresses | undefined, host: string | undefined) {
      const entry = registry.pick(listener, host);
      return (
        entry && {
          address: entry.address,
          authorizationEndpoint: `${entry.issuer}/authorization`,
          callbackUri: accountCallbackUri(entry.address),
          clientId: CLIENT_ID,
        }
      );
    },

    async exchangeCode(
      address: string,
      p: { code: string; verifier: string; redirectUri: string },
      browser: Socket | undefined,
    ): Promise<TokenSet> {
      const form = {
        grant_type: 'authorization_code',
        client_id: CLIENT_ID,
        code: p.code,
        code_verifier: p.verifier,
        redirect_uri: p.redirectUri,
      };
      return tokenSetOf(await postToTokenEndpoint(entryAt(address), form, browser));
    },

    async refresh(address: string, refreshToken: string, browser: Socket | undefined): Promise<TokenSet> {
      const form = { grant_type: 'refresh_token', client_id: CLIENT_ID, refresh_token: refreshToken };
      return tokenSetOf(await postToTokenEndpoint(entryAt(address), form, browser));
    },
  };
}

export type AccountTokenRequests = ReturnType<typeof createAccountTokenRequests>;
