import { errors, type Account, type FindAccount, type KoaContextWithOIDC } from 'oidc-provider';
import type { Identity } from '../repositories/identities-repository.js';
import { isForeignKeyViolation } from '../db/db-errors.js';
import { isDisabled } from '../services/auth/identity-status.js';
import type { RevocationState } from '../services/revocation-state.js';
import { presentedCertX5tS256 } from '../crypto/connection-certificate.js';
import { currentRequestScope } from '../services/request-scope.js';
import type { CompletedLogins } from './completed-logins.js';
import { deviceIssuerOf } from './device-flow.js';
import type { GrantPrefetch } from './grant-prefetch.js';
import type { LoginState } from './login-state.js';
import { confirmationOf, type LoginFacts, type OidcSessions, type SessionOrigin } from './oidc-sessions.js';

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
 * RFC 8705 §3: the code of a grant bound to a certificate is exchanged, and its refresh tokens
 * redeemed, only over a connection presenting that certificate. The provider loads the account
 * before it rotates a refresh token (pinned by test/oidc/bound-tokens-contract.test.ts), so a
 * refusal leaves the refresh token usable; a code is already used up by then, as any code whose
 * exchange fails after its redemption. Not the provider's own mTLS binding: that is per client,
 * and would demand a certificate of every login of `svc`.
 */
function assertBoundCertificate(ctx: KoaContextWithOIDC, facts: LoginFacts): void {
  if (facts.boundCertX5tS256 === undefined) return;
  if (presentedCertX5tS256(ctx.req.socket) === facts.boundCertX5tS256) return;
  throw new errors.InvalidGrant(
    'the tokens of this grant are bound to a client certificate this connection did not present',
  );
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
   * A grant bound to a certificate throws `invalid_grant` over a connection without it.
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
      assertBoundCertificate(ctx, facts);
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

  /** Our `z_` claims (docs/adr/0002-oidc-login-state.md) and, for a bound grant, `cnf`: the same across refreshes of one grant. */
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
      cnf: confirmationOf(facts),
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

  /**
   * RFC 7009 §2.1 for the refresh tokens the provider revokes itself: the client's own, and, of a
   * grant bound to a certificate, only over a connection presenting it. A copied refresh token
   * alone must not end the device's session; the endpoint answers 200 all the same (§2.2).
   */
  async function revocationAllowed(
    ctx: KoaContextWithOIDC,
    client: { clientId: string },
    token: { clientId?: string; grantId?: string; kind?: string },
  ): Promise<boolean> {
    if (token.clientId !== client.clientId) return false;
    if (!token.grantId) return true;
    const facts = await factsOf(ctx, token.grantId);
    return (
      facts?.boundCertX5tS256 === undefined || presentedCertX5tS256(ctx.req.socket) === facts.boundCertX5tS256
    );
  }

  return { findAccount, extraTokenClaims, loadExistingGrant, revocationAllowed };
}

export type AccountPolicy = ReturnType<typeof createAccountPolicy>;
