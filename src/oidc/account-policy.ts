import { errors, type Account, type FindAccount, type KoaContextWithOIDC } from 'oidc-provider';
import type { Identity } from '../repositories/identities-repository.js';
import { isForeignKeyViolation } from '../db/db-errors.js';
import { isDisabled } from '../services/auth/identity-status.js';
import type { RevocationState } from '../services/revocation-state.js';
import { currentRequestScope } from '../services/request-scope.js';
import type { CompletedLogins } from './completed-logins.js';
import { deviceIssuerOf } from './device-flow.js';
import type { GrantPrefetch } from './grant-prefetch.js';
import type { LoginState } from './login-state.js';
import type { LoginFacts, OidcSessions, SessionOrigin } from './oidc-sessions.js';

export interface AccountPolicyDeps {
  findIdentity: (id: string) => Promise<Identity | undefined>;
  sessions: OidcSessions;
  /**
   * What the read of a refresh token or code already brought of its grant within this request:
   * the token request's account and claims take its facts and identity from there.
   */
  prefetch: GrantPrefetch;
  /** The identity the login step completing on this request has just read (its in-process resume). */
  completedLogins: Pick<CompletedLogins, 'identityFor' | 'openedSessionEnd'>;
  /**
   * What every instance knows of revocations, in memory: it also refuses a grant whose facts were
   * read before a revocation that landed while the request was being served.
   */
  revocations?: Pick<RevocationState, 'isSessionRevoked' | 'isIdentityTokenRevoked'>;
  now?: () => Date;
}

/**
 * The private claim carrying the identity's token generation (a revocation refuses tokens of older
 * generations, ADR 0006).
 */
export const GENERATION_CLAIM = 'z_gen';

/** What `complete` (login-flow.ts) leaves in `interaction.result.svc` for the grant to pick up. */
export const loginFactsOfResult = (ctx: KoaContextWithOIDC): LoginFacts | undefined =>
  ctx.oidc.result?.login ? (ctx.oidc.result.svc as LoginFacts | undefined) : undefined;

/**
 * Where the login finishing on this request came from: its primary method (`complete` leaves the
 * login state beside the facts) and the client address, read from the request scope as the
 * request log and audit events read it (the provider's own context knows nothing of our listener).
 */
function originOfResult(ctx: KoaContextWithOIDC): SessionOrigin {
  const method = (ctx.oidc.result?.svc as Partial<LoginState> | undefined)?.method;
  return {
    authMethod: typeof method === 'string' ? method : null,
    ipAddress: currentRequestScope()?.sourceAddress() ?? null,
  };
}

/**
 * The provider's view of identities and of our login facts: accounts, token claims and the
 * grant policy of the first-party client.
 */
export function createAccountPolicy({
  findIdentity,
  sessions,
  prefetch,
  completedLogins,
  revocations,
  now = () => new Date(),
}: AccountPolicyDeps) {
  /**
   * A grant's facts: a code exchange or a refresh grant has them from the read of its code or
   * refresh token (the adapter's prefetch), so asking twice (account, then claims) reads nothing.
   * Any other request with a grant id reads them.
   */
  async function factsOf(ctx: object, grantId: string): Promise<LoginFacts | undefined> {
    const hit = prefetch.get(ctx, grantId);
    return hit ? hit.facts : sessions.factsOf(grantId);
  }

  /**
   * A deleted or disabled identity has no account (codes and refresh tokens then fail with
   * `invalid_grant`); neither has a grant whose API session ended or whose identity was revoked.
   */
  const findAccount: FindAccount = async (ctx, sub, token) => {
    const hit = token?.grantId ? prefetch.get(ctx, token.grantId) : undefined;
    const identity =
      hit && hit.accountId === sub
        ? hit.identity
        : (completedLogins.identityFor(ctx.req, sub) ?? (await findIdentity(sub)));
    if (!identity || isDisabled(identity, now())) return undefined;
    let facts: LoginFacts | undefined;
    if (token?.grantId) {
      facts = await factsOf(ctx, token.grantId);
      if (!facts || identity.tokenGeneration > facts.tokenGeneration) return undefined;
      if (revocations?.isSessionRevoked(facts.apiSessionId)) return undefined;
      if (revocations?.isIdentityTokenRevoked(sub, facts.tokenGeneration)) return undefined;
    }
    const account: Account = {
      accountId: sub,
      claims: () => ({
        sub,
        name: identity.name,
        ...(facts ? { z_ia: facts.isAdmin, z_asid: facts.apiSessionId } : {}),
      }),
    };
    return account;
  };

  /** Our `z_` claims (docs/adr/0002-oidc-login-state.md), the same across refreshes of one grant. */
  async function extraTokenClaims(ctx: KoaContextWithOIDC, token: { kind: string; grantId?: string }) {
    if (token.kind !== 'AccessToken' || !token.grantId) return undefined;
    const facts = await factsOf(ctx, token.grantId);
    if (!facts) throw new errors.InvalidGrant('the API session of this grant has ended');
    return {
      amr: facts.amr,
      auth_time: facts.authTime,
      z_asid: facts.apiSessionId,
      z_ia: facts.isAdmin,
      z_ct: facts.configTypes,
      z_t: 'a',
      z_ice: facts.isCertExtendable,
      [GENERATION_CLAIM]: facts.tokenGeneration,
    };
  }

  /**
   * No consent step for the first-party client: after our login a fresh grant holds
   * exactly the requested scopes, and its API session starts with it. Outside a finished login
   * there is no grant, so the login prompt always runs.
   */
  async function loadExistingGrant(ctx: KoaContextWithOIDC) {
    const facts = loginFactsOfResult(ctx);
    const { client, session } = ctx.oidc;
    if (!facts || !client || !session?.accountId) return undefined;
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addOIDCScope([...ctx.oidc.requestParamOIDCScopes].join(' '));
    for (const [indicator, server] of Object.entries(ctx.oidc.resourceServers ?? {})) {
      const scopes = [...ctx.oidc.requestParamScopes].filter((s) => server.scopes.has(s));
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    try {
      const openedUntil = completedLogins.openedSessionEnd(ctx.req, facts.apiSessionId);
      // A device's login is its issuer's, wherever the person typed the code.
      const issuer = deviceIssuerOf(ctx) ?? ctx.oidc.issuer;
      await sessions.start(grantId, { ...facts, issuer }, originOfResult(ctx), openedUntil);
    } catch (err) {
      // The identity was deleted between the login and here: no session, no grant, no code.
      if (!isForeignKeyViolation(err)) throw err;
      await grant.destroy();
      throw new errors.AccessDenied('the identity no longer exists');
    }
    return grant;
  }

  return { findAccount, extraTokenClaims, loadExistingGrant };
}

export type AccountPolicy = ReturnType<typeof createAccountPolicy>;
