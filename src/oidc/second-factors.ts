import { isAppError } from '../errors/app-error.js';
import type { Challenge } from '../errors/www-authenticate.js';
import type { ExternalJwtSigner } from '../repositories/external-jwt-signers-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import type { ExtJwtMethod } from '../services/auth/ext-jwt-method.js';
import {
  secondFactorRequirement,
  type AuthPolicy,
  type SecondFactorRequirementDeps,
} from '../services/mfa/second-factor-requirement.js';
import type { AuditTrail } from '../services/audit-trail.js';
import { LOGIN_PATHS } from './login-paths.js';
import { credentialName, type AuthQuery, type LoginState } from './login-state.js';

/** Names of second factors in `LoginState.satisfied`, and the `amr` value each adds. */
export const FACTORS = {
  totp: { satisfied: 'totp', amr: 'otp' },
  extJwt: { satisfied: 'secondary-ext-jwt', amr: 'ext-jwt' },
  // RFC 8176 `pop`: proof of possession of a key. A passkey pays what a TOTP code pays, and more.
  passkey: { satisfied: 'passkey', amr: 'pop' },
} as const;

/** What a partially authenticated auth request still owes. */
export interface OwedFactors {
  authQueries: AuthQuery[];
  /** `svc-secondary-ext-jwt` challenges for the 200 answer when the secondary JWT is not there. */
  challenges: Challenge[];
}

export interface SecondFactorsDeps extends SecondFactorRequirementDeps {
  extJwt: Pick<ExtJwtMethod, 'checkSecondary'>;
  findSigner: (id: string) => Promise<ExternalJwtSigner | undefined>;
  audit?: AuditTrail;
}

/** The TOTP query of the OIDC flow (its shape is part of the API: docs/architecture.md, auth queries). */
export const totpQuery = (isTotpEnrolled: boolean): AuthQuery => ({
  typeId: 'MFA',
  format: 'alphaNumeric',
  httpMethod: 'POST',
  httpUrl: LOGIN_PATHS.totp,
  minLength: 6,
  maxLength: 6,
  provider: 'svc',
  isTotpEnrolled,
});

/** Where a passkey assertion goes (GET the same URL for its request options). */
export const PASSKEY_MEMBER = { httpMethod: 'POST', httpUrl: LOGIN_PATHS.passkey } as const;

/**
 * The query of a policy that requires a passkey (`secondary.requirePasskey`), built like the TOTP
 * query: `isPasskeyRegistered` false means the login registers one mid-flow, at `passkey.httpUrl`
 * (GET the creation options, POST the new credential), once it is all that is owed.
 */
const passkeyQuery = (isPasskeyRegistered: boolean): AuthQuery => {
  const passkey = isPasskeyRegistered
    ? PASSKEY_MEMBER
    : { httpMethod: 'POST', httpUrl: LOGIN_PATHS.passkeyRegister };
  return { typeId: 'MFA', provider: 'svc', ...passkey, passkey, isPasskeyRegistered };
};

/**
 * A query that a passkey assertion of the identity pays: an MFA query with the `passkey` member,
 * except the one that asks to register the first passkey (the identity has none to assert).
 */
export const payableByPasskey = (q: AuthQuery): boolean =>
  q.typeId === 'MFA' && q.passkey !== undefined && q.isPasskeyRegistered !== false;

/** The secondary external JWT query: where the client gets the JWT. */
export function extJwtQuery(signerId: string, signer: ExternalJwtSigner | undefined): AuthQuery {
  return {
    typeId: 'EXT-JWT',
    provider: 'url',
    id: signerId,
    httpUrl: signer?.externalAuthUrl ?? null,
    clientId: signer?.clientId ?? null,
    scopes: signer?.scopes ?? [],
  };
}

/**
 * Records a satisfied factor, its `amr` value and the credential that satisfied it on the auth
 * request's state (`credential` names the signer for external JWTs: see `LoginState.credentials`).
 */
export function satisfy(
  state: LoginState,
  factor: (typeof FACTORS)[keyof typeof FACTORS],
  credential: string = factor.satisfied,
): void {
  if (!state.satisfied.includes(factor.satisfied)) state.satisfied.push(factor.satisfied);
  if (!state.amr.includes(factor.amr)) state.amr.push(factor.amr);
  state.credentials ??= [];
  if (!state.credentials.includes(credential)) state.credentials.push(credential);
}

/**
 * Second factors of the OIDC login: the MFA step (secondFactorRequirement: a passkey when the
 * policy requires one, else TOTP when the policy requires it or the identity has verified TOTP,
 * which a passkey of the identity pays as well), and the policy's secondary external JWT, taken
 * from the `Authorization: Bearer` values of the request at hand.
 */
export function createSecondFactors(deps: SecondFactorsDeps) {
  /** Undefined when a JWT among `tokens` satisfies the factor, else the challenges to send. */
  async function extJwtFailure(
    tokens: string[],
    signerId: string,
    identity: Identity,
  ): Promise<Challenge[] | undefined> {
    try {
      // The identity is always passed: another user's JWT from the same IdP is no factor here.
      await deps.extJwt.checkSecondary(tokens, signerId, identity);
      return undefined;
    } catch (err) {
      if (isAppError(err) && err.code === 'UNAUTHORIZED') return err.challenges;
      throw err;
    }
  }

  /**
   * The MFA step of this login, as OIDC auth queries (secondFactorRequirement): `owed`, a factor
   * to pay now (a TOTP code, a passkey assertion), and `toBind`, a factor still to be enrolled or
   * registered, which waits until it is all that is owed. Under `requirePasskey`, a verified TOTP
   * of an identity without a passkey is owed first; its code unlocks the registration but does
   * not pay the passkey.
   */
  async function mfaQueries(
    identity: Identity,
    policy: AuthPolicy,
    state: LoginState,
  ): Promise<{ owed?: AuthQuery; toBind?: AuthQuery }> {
    if (state.satisfied.includes(FACTORS.passkey.satisfied)) return {};
    const totpPaid = state.satisfied.includes(FACTORS.totp.satisfied);
    const need = await secondFactorRequirement(deps, identity.id, policy);
    switch (need.kind) {
      case 'none':
        return {};
      case 'passkey':
        if (need.registered) return { owed: passkeyQuery(true) };
        return need.totpFirst && !totpPaid
          ? { owed: totpQuery(true), toBind: passkeyQuery(false) }
          : { toBind: passkeyQuery(false) };
      case 'totp': {
        if (totpPaid) return {};
        const query = need.hasPasskey
          ? { ...totpQuery(need.verified), passkey: PASSKEY_MEMBER }
          : totpQuery(need.verified);
        return need.verified ? { owed: query } : { toBind: query };
      }
    }
  }

  /**
   * Every factor still owed: a code of a verified TOTP first, a TOTP still to be enrolled (or a
   * passkey to be registered) last, since binding a new factor waits until it is all that is owed
   * (`owesOnly`, factor-binding.ts). A secondary JWT that verifies is recorded in `state` at once,
   * so it stays satisfied for this auth request (the caller persists `state`).
   */
  async function evaluate(
    identity: Identity,
    policy: AuthPolicy,
    state: LoginState,
    tokens: string[],
  ): Promise<OwedFactors> {
    const owed: OwedFactors = { authQueries: [], challenges: [] };
    const mfa = await mfaQueries(identity, policy, state);
    if (mfa.owed) owed.authQueries.push(mfa.owed);
    const signerId = policy.secondary.requireExtJwt;
    if (signerId && !state.satisfied.includes(FACTORS.extJwt.satisfied)) {
      const failure = await extJwtFailure(tokens, signerId, identity);
      // A request without any JWT is a question (what is owed?), not a decision.
      // A success is stored with the write the login step makes (its progress, or its grant);
      // a failure is counted in its row of the minute.
      if (failure === undefined) {
        await deps.audit?.hold({
          event: 'auth.second-factor',
          method: 'ext-jwt',
          outcome: 'success',
          identityId: identity.id,
          signerId,
        });
      } else if (tokens.length > 0) {
        await deps.audit?.storeAttempt({
          event: 'auth.second-factor',
          method: 'ext-jwt',
          outcome: 'failure',
          identityId: identity.id,
          signerId,
          reason: 'no-valid-jwt-of-the-signer',
        });
      }
      if (failure === undefined) satisfy(state, FACTORS.extJwt, credentialName('ext-jwt', signerId));
      else {
        owed.authQueries.push(extJwtQuery(signerId, await deps.findSigner(signerId)));
        owed.challenges.push(...failure);
      }
    }
    if (mfa.toBind) owed.authQueries.push(mfa.toBind);
    return owed;
  }

  return { evaluate };
}

export type SecondFactors = ReturnType<typeof createSecondFactors>;
