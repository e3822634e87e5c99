import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Knex } from 'knex';
import type { SecretBox } from '../../crypto/secret-box.js';
import { constantTimeEqual, newToken } from '../../crypto/random.js';
import { hashTokenId } from '../../crypto/token-id-hash.js';
import { AppError } from '../../errors/app-error.js';
import {
  accountSessionsRepository,
  type AccountSessionRow,
} from '../../repositories/account-sessions-repository.js';
import type { Principal } from '../auth/principal.js';

/** A sign-in in flight lasts as long as the provider keeps its interaction. */
const LOGIN_SECONDS = 600;
/** However long the grant could last, the account page asks for a new sign-in after this. */
const ACCOUNT_SESSION_MAX_SECONDS = 12 * 3600;
/** An access token this close to its end is refreshed before it is used. */
const REFRESH_MARGIN_MS = 30_000;
/** How long one request may hold the refresh of a session before another may try. */
const REFRESH_CLAIM_MS = 10_000;
const REFRESH_WAIT_STEP_MS = 100;

/** What the token endpoint answered the account page, already checked for shape. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string;
  idToken?: string;
  /** Seconds, from `expires_in`. */
  expiresIn: number;
}

/** The provider's token endpoint, as the account page reaches it (src/oidc/account-token-requests.ts). */
export interface AccountTokenEndpoint {
  exchangeCode(
    address: string,
    p: { code: string; verifier: string; redirectUri: string },
    connection: Socket | undefined,
  ): Promise<TokenSet>;
  refresh(address: string, refreshToken: string, connection: Socket | undefined): Promise<TokenSet>;
}

export interface AccountSessionDeps {
  knex: Knex;
  box: SecretBox;
  tokens: AccountTokenEndpoint;
  /** Verifies an access token as the Edge APIs do: signature, expiry, revocation, binding. */
  verifyAccessToken(token: string, connection: Socket | undefined): Promise<Principal>;
  /** Ends one API session of an identity (sign out). */
  endApiSession(identityId: string, apiSessionId: string): Promise<void>;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
}

/** The sealed parts of a sign-in in flight. */
interface LoginSecrets {
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
  returnTo: string;
}

interface StoredTokens {
  accessToken: string;
  refreshToken: string;
}

/** A signed-in account page request: who, through which API session, and its CSRF secret. */
export interface AccountSession {
  /** The row's key: the hash of the cookie, never the cookie (passkey ceremonies bind to it). */
  id: string;
  principal: Principal;
  csrfToken: string;
  /** When the person last proved who they are (the ID token's `auth_time`). */
  authTime: Date | null;
}

const EXT_JWT_REFUSAL =
  'your identity’s policy requires an external JWT with every request, which the account page cannot send';

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** The claims of an ID token the provider just handed over in-process (no signature check needed). */
function idTokenClaims(idToken: string | undefined): { nonce?: unknown; auth_time?: unknown } {
  const payload = idToken?.split('.')[1];
  if (!payload) return {};
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/**
 * The account page's sessions (docs/adr/0014-account-page.md): the sign-in as a relying party of
 * our own provider, the tokens kept sealed in `account_sessions` and refreshed here, never in the
 * browser, which holds only a random cookie whose hash names the row.
 */
export function createAccountSessionService(deps: AccountSessionDeps) {
  const { knex, box } = deps;
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  const sealTokens = (t: TokenSet) =>
    box.seal(
      JSON.stringify({ accessToken: t.accessToken, refreshToken: t.refreshToken } satisfies StoredTokens),
    );
  const accessEnd = (t: TokenSet, at: Date) => new Date(at.getTime() + t.expiresIn * 1000);

  async function endRow(idHash: string): Promise<void> {
    const ended = await accountSessionsRepository.deleteSession(knex, idHash);
    if (!ended) return;
    await deps.endApiSession(ended.identityId, ended.apiSessionId).catch((err: unknown) => {
      // Already ended elsewhere (another tab, an admin): nothing left to end.
      if (!(err instanceof AppError && err.code === 'NOT_FOUND')) throw err;
    });
  }

  /** The row with tokens good for a while yet: refreshed by this request or by a concurrent one. */
  async function withFreshTokens(
    row: AccountSessionRow,
    connection: Socket | undefined,
  ): Promise<AccountSessionRow | undefined> {
    let current: AccountSessionRow | undefined = row;
    const deadline = now().getTime() + REFRESH_CLAIM_MS;
    while (current && current.accessExpiresAt.getTime() - now().getTime() <= REFRESH_MARGIN_MS) {
      const at = now();
      const claimed = await accountSessionsRepository.claimRefresh(
        knex,
        current.idHash,
        current.tokensVersion,
        at,
        new Date(at.getTime() + REFRESH_CLAIM_MS),
      );
      if (claimed) {
        const stored = JSON.parse(box.open(current.tokensSealed)) as StoredTokens;
        let fresh: TokenSet;
        try {
          fresh = await deps.tokens.refresh(current.issuerAddress, stored.refreshToken, connection);
        } catch (err) {
          // The grant is gone (ended, revoked, expired): so is this session.
          if (err instanceof AppError && err.code === 'ACCOUNT_SIGN_IN_FAILED') {
            await endRow(current.idHash);
            return undefined;
          }
          throw err;
        }
        const sealed = sealTokens(fresh);
        const end = accessEnd(fresh, at);
        await accountSessionsRepository.storeRefreshed(
          knex,
          current.idHash,
          current.tokensVersion,
          sealed,
          end,
        );
        return {
          ...current,
          tokensSealed: sealed,
          tokensVersion: current.tokensVersion + 1,
          accessExpiresAt: end,
        };
      }
      // Another request is refreshing this session: wait for its tokens.
      if (now().getTime() > deadline) throw new AppError('RATE_LIMITED', { headers: { 'retry-after': '1' } });
      await sleep(REFRESH_WAIT_STEP_MS);
      current = await accountSessionsRepository.findSession(knex, current.idHash, now());
    }
    return current;
  }

  return {
    /**
     * Starts a sign-in at the issuer `address`: a row holding the sealed state, nonce and PKCE
     * verifier, named by the returned cookie; the authorization request's parameters.
     */
    async startLogin(address: string, redirectUri: string, returnTo: string) {
      const cookie = newToken();
      const secrets: LoginSecrets = {
        state: newToken(),
        nonce: newToken(),
        verifier: newToken(48),
        redirectUri,
        returnTo,
      };
      const at = now();
      await accountSessionsRepository.insertLogin(knex, {
        idHash: hashTokenId(cookie),
        issuerAddress: address,
        loginSealed: box.seal(JSON.stringify(secrets)),
        now: at,
        expiresAt: new Date(at.getTime() + LOGIN_SECONDS * 1000),
      });
      return {
        cookie,
        cookieSeconds: LOGIN_SECONDS,
        params: {
          state: secrets.state,
          nonce: secrets.nonce,
          codeChallenge: s256(secrets.verifier),
          redirectUri,
        },
      };
    },

    /**
     * The callback: consumes the sign-in (once, on any instance), redeems the code at the token
     * endpoint and opens the session. A session the browser already had ends (a new sign-in
     * replaces it). Returns the new session's cookie and where to go next.
     */
    async finishLogin(
      loginCookie: string | undefined,
      p: { code: string; state: string },
      connection: Socket | undefined,
      previousCookie: string | undefined,
    ): Promise<{ cookie: string; cookieSeconds: number; returnTo: string }> {
      if (!loginCookie) throw new AppError('ACCOUNT_SIGN_IN_FAILED');
      const login = await accountSessionsRepository.consumeLogin(knex, hashTokenId(loginCookie), now());
      if (!login) throw new AppError('ACCOUNT_SIGN_IN_FAILED');
      const secrets = JSON.parse(box.open(login.loginSealed)) as LoginSecrets;
      if (!constantTimeEqual(secrets.state, p.state)) throw new AppError('ACCOUNT_SIGN_IN_FAILED');
      const tokens = await deps.tokens.exchangeCode(
        login.issuerAddress,
        { code: p.code, verifier: secrets.verifier, redirectUri: secrets.redirectUri },
        connection,
      );
      const claims = idTokenClaims(tokens.idToken);
      if (typeof claims.nonce !== 'string' || !constantTimeEqual(claims.nonce, secrets.nonce)) {
        throw new AppError('ACCOUNT_SIGN_IN_FAILED');
      }
      const principal = await deps.verifyAccessToken(tokens.accessToken, connection);
      if (principal.requireExtJwtSigner) {
        // Every request of such an identity must carry a JWT of its signer, which this page has no
        // way to send: it serves none of them, rather than serve them without it.
        await deps.endApiSession(principal.identityId, principal.sessionId);
        throw new AppError('FORBIDDEN', { message: EXT_JWT_REFUSAL });
      }
      if (previousCookie) await endRow(hashTokenId(previousCookie));
      const cookie = newToken();
      const at = now();
      await accountSessionsRepository.insertSession(knex, {
        idHash: hashTokenId(cookie),
        identityId: principal.identityId,
        apiSessionId: principal.sessionId,
        issuerAddress: login.issuerAddress,
        tokensSealed: sealTokens(tokens),
        accessExpiresAt: accessEnd(tokens, at),
        csrfSealed: box.seal(newToken()),
        authTime: typeof claims.auth_time === 'number' ? new Date(claims.auth_time * 1000) : at,
        expiresAt: new Date(at.getTime() + ACCOUNT_SESSION_MAX_SECONDS * 1000),
        now: at,
      });
      return { cookie, cookieSeconds: ACCOUNT_SESSION_MAX_SECONDS, returnTo: secrets.returnTo };
    },

    /**
     * The session a cookie names, with a usable access token (refreshed here when it is about to
     * end) that still verifies; undefined when there is none any more (the row is then gone too).
     */
    async current(
      cookie: string | undefined,
      connection: Socket | undefined,
    ): Promise<AccountSession | undefined> {
      if (!cookie) return undefined;
      const found = await accountSessionsRepository.findSession(knex, hashTokenId(cookie), now());
      if (!found) return undefined;
      const row = await withFreshTokens(found, connection);
      if (!row) return undefined;
      const { accessToken } = JSON.parse(box.open(row.tokensSealed)) as StoredTokens;
      let principal: Principal;
      try {
        principal = await deps.verifyAccessToken(accessToken, connection);
      } catch (err) {
        if (!(err instanceof AppError) || err.status !== 401) throw err;
        // Its API session ended, the identity was disabled or revoked: the page's session ends too.
        await endRow(row.idHash);
        return undefined;
      }
      if (principal.requireExtJwtSigner) {
        // The policy came to require a secondary external JWT after the sign-in.
        await endRow(row.idHash);
        return undefined;
      }
      return { id: row.idHash, principal, csrfToken: box.open(row.csrfSealed), authTime: row.authTime };
    },

    /** The synchronizer token of a form or fetch, compared in constant time. */
    checkCsrf(session: AccountSession, presented: unknown): void {
      if (typeof presented !== 'string' || !constantTimeEqual(presented, session.csrfToken)) {
        throw new AppError('CSRF_REFUSED');
      }
    },

    /** Sign out: the row and its API session (with the grant's tokens) end. */
    async signOut(cookie: string | undefined): Promise<void> {
      if (cookie) await endRow(hashTokenId(cookie));
    },
  };
}

export type AccountSessionService = ReturnType<typeof createAccountSessionService>;
