import type { Knex } from 'knex';
import type { Context } from 'koa';
import { AppError, isAppError } from '../errors/app-error.js';
import { newId } from '../crypto/random.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import type { AuthPolicy } from '../repositories/auth-policies-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { MAX_CONFIG_TYPES } from '../schemas/authenticate-schemas.js';
import { isDisabled } from '../services/auth/identity-status.js';
import { currentRequestScope } from '../services/request-scope.js';
import type { PrimaryAuthResult } from '../services/auth/primary-result.js';
import type { TotpService } from '../services/mfa/totp-service.js';
import { CLIENT_ID } from './create-provider.js';
import { confirmedUserCode } from './device-login-binding.js';
import { shownUserCode } from './device-flow.js';
import type { IssuerEntry, IssuerRegistry } from './issuer-registry.js';
import type { PrimaryMethod } from './login-paths.js';
import { amrWithMfa, credentialName, type LoginState } from './login-state.js';
import { issuerEntryOf } from './oidc-dispatch.js';
import type { CompletedLogin, CompletedLogins } from './completed-logins.js';
import type { LoginFacts, OidcSessions } from './oidc-sessions.js';
import type { SessionLimitService } from '../services/session-limit.js';
import { resumeInProcess } from './resume-in-process.js';
import { assertReadyToBind, TOTP_BINDING, type BindableFactor } from './factor-binding.js';
import { createLoginEnrollment, ownEnrollment } from './login-enrollment.js';
import { createPasskeySteps, type PasskeyStepsDeps } from './passkey-steps.js';
import { FACTORS, satisfy, type OwedFactors, type SecondFactors } from './second-factors.js';

/*
 * The OIDC login as one small state machine (docs/architecture.md). Per request:
 *
 *   loadPendingLogin   the auth request; its identity and policy are read at most once
 *     → a step         password | cert | ext-jwt | passkey (primary) · totp · totp-enroll-verify
 *                      · passkey-assertion · passkey-register (passkey-steps.ts)
 *     → advance        the factors still owed, with the JWTs of this request:
 *         owes         kept on the auth request ("partially authenticated"), answered 200
 *         complete     facts for the tokens, in-process resume: the provider answers 303
 *
 * TOTP enrollment mid-flow (login-enrollment.ts) starts, shows and abandons an enrollment on a
 * pending login that owes a TOTP code and nothing else (factor-binding.ts), without advancing it;
 * its verify is a step. The routes (routes/oidc-login-routes.ts) parse input and render the
 * outcome as JSON or an HTML page.
 */

/** One pending authorization request (an oidc-provider Interaction of prompt `login`). */
export interface PendingLogin {
  uid: string;
  /** The authorization request's parameters (client_id, scope, svc_ct, …). */
  params: Record<string, unknown>;
  /** What the auth request has established: set once its primary step is done. */
  state?: LoginState;
  /** The issuer the request was made to: it finishes there, whatever host the login used. */
  entry: IssuerEntry;
  interaction: InteractionLike;
  /** The identity and policy of this login, read at most once per request. */
  identityWithPolicy?: Promise<IdentityWithPolicy>;
  /** A device authorization's login (RFC 8628): the code of the device it signs in, as shown. */
  deviceUserCode?: string;
}

interface InteractionLike {
  uid: string;
  returnTo: string;
  params: Record<string, unknown>;
  prompt: { name: string };
  result?: Record<string, unknown>;
  persist(): Promise<unknown>;
  /** What `persist` would hand to the adapter, before the adapter seals it (oidc-provider's BaseModel). */
  getValueAndPayload(): Promise<{ payload?: Record<string, unknown> }>;
  /** Set when the login confirms a device authorization (RFC 8628): the device code's id. */
  deviceCode?: string;
}

/** An identity with its auth policy, as the login's steps read them (not oidc-provider's `Account`). */
export interface IdentityWithPolicy {
  identity: Identity;
  policy: AuthPolicy;
}

/** A step's result: the new state, with the identity and policy it belongs to. */
export interface Progress extends IdentityWithPolicy {
  state: LoginState;
}

/** A step that advances a login, with its input as the route parsed it. */
export type LoginStep =
  | { name: PrimaryMethod; configTypes?: string[]; check: () => Promise<PrimaryAuthResult> }
  | { name: 'totp'; code: string }
  | { name: 'totp-enroll-verify'; code: string }
  | { name: 'passkey-assertion'; response: unknown }
  | { name: 'passkey-register'; passkeyName?: string; response: unknown };

/** Where a step leaves the login: factors still owed (200), or complete (the provider sent 303). */
export type LoginOutcome = ({ kind: 'owes' } & OwedFactors) | { kind: 'complete' };

export interface LoginFlowDeps {
  knex: Knex;
  registry: IssuerRegistry;
  factors: SecondFactors;
  totp: Pick<
    TotpService,
    | 'verifyLoginCode'
    | 'startMarkedEnrollment'
    | 'verifyEnrollment'
    | 'abandonEnrollment'
    | 'provisioningUrlFor'
  >;
  /** The identity with its policy (one read). */
  findIdentityWithPolicy: (id: string) => Promise<IdentityWithPolicy | undefined>;
  /** Hands the completed interaction and the identity read here to the provider's resume of the same request. */
  completedLogins: Pick<CompletedLogins, 'remember'>;
  /** The policy's concurrent-session limit, checked as the login completes. */
  sessionLimit: Pick<SessionLimitService, 'admit'>;
  /** Writes the login's API session inside the session limit's transaction. */
  sessions: Pick<OidcSessions, 'open'>;
  /** Passkey ceremonies (an extension beyond the specification), and the site of a request. */
  passkeys: PasskeyStepsDeps['passkeys'];
  passkeyFactor: PasskeyStepsDeps['factor'];
  webauthnSiteOf: PasskeyStepsDeps['siteOf'];
  now?: () => Date;
}

const invalidRequest = (detail: string) => new AppError('INVALID_AUTH_REQUEST', { detail });

/** Why a device authorization's login step was refused in a browser other than the confirming one. */
export const DEVICE_LOGIN_ELSEWHERE = 'device login outside the browser that confirmed its code';
const deviceLoginElsewhere = () =>
  new AppError('INVALID_AUTH_REQUEST', {
    message: 'this device sign-in continues only in the browser that confirmed the device code',
    detail: DEVICE_LOGIN_ELSEWHERE,
  });

/** A login step refused because it is a device's login in another browser (the routes show a page). */
export const isDeviceLoginElsewhere = (err: unknown) =>
  isAppError(err) && err.detail === DEVICE_LOGIN_ELSEWHERE;
const identityGone = () =>
  new AppError('INVALID_AUTH', { detail: 'identity deleted or disabled during the login' });

/** `configTypes` of the authorization request (`svc_ct`, written by the dispatcher). */
function requestedConfigTypes(params: Record<string, unknown>): string[] {
  if (typeof params.svc_ct !== 'string') return [];
  try {
    const list = JSON.parse(params.svc_ct) as unknown;
    return Array.isArray(list)
      ? list.filter((v): v is string => typeof v === 'string').slice(0, MAX_CONFIG_TYPES)
      : [];
  } catch {
    return [];
  }
}

/**
 * RFC 8705 §3: a login whose primary step was a client certificate, under a policy that binds
 * tokens, binds its tokens to that certificate; the policy as it is when the login completes.
 * Not a device authorization's: the certificate is the person's browser's, and the tokens go to
 * the device that polls, which never presented it.
 */
function boundCertificate(
  pending: PendingLogin,
  state: LoginState,
  policy: AuthPolicy,
): Pick<LoginFacts, 'boundCertX5tS256'> {
  return state.presentedCertX5tS256 && policy.primary.cert.bindTokens && !pending.interaction.deviceCode
    ? { boundCertX5tS256: state.presentedCertX5tS256 }
    : {};
}

export function createLoginFlow(deps: LoginFlowDeps) {
  const now = deps.now ?? (() => new Date());

  /** Unknown, expired, finished or foreign auth requests: 400 INVALID_AUTH_REQUEST. */
  async function loadPendingLogin(ctx: Context, id: unknown): Promise<PendingLogin> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 128)
      throw invalidRequest('no auth request id');
    // The issuer of this request's listener and Host, picked by the dispatcher (oidc-dispatch.ts).
    const current = issuerEntryOf(ctx);
    const interaction = (await current.provider.Interaction.find(id)) as unknown as
      InteractionLike | undefined;
    if (!interaction) throw invalidRequest('unknown or expired auth request');
    if (interaction.prompt?.name !== 'login' || interaction.params.client_id !== CLIENT_ID) {
      throw invalidRequest('not a login request');
    }
    // A completed auth request is consumed, and the adapter's find treats it as gone ('unknown or
    // expired' above): no interaction found here holds a login result, so this is only a guard.
    if (interaction.result?.login) throw invalidRequest('auth request already completed');
    // Only an auth request begun on this listener continues here, under its own issuer.
    const entry = deps.registry.pick(ctx.state.listener, new URL(interaction.returnTo).host);
    if (!entry) throw invalidRequest('the issuer of this auth request is gone');
    const state = interaction.result?.svc as LoginState | undefined;
    const pending = { uid: interaction.uid, params: interaction.params, state, entry, interaction };
    if (interaction.deviceCode === undefined) return pending;
    // A device's tokens go to whoever polls its code, not to a client holding a PKCE verifier:
    // its login continues only in the browser that confirmed the code (device-login-binding.ts).
    const userCode = confirmedUserCode(ctx.cookies, entry.cookieKey, interaction.uid);
    if (userCode === undefined) throw deviceLoginElsewhere();
    return { ...pending, deviceUserCode: shownUserCode(userCode) ?? userCode };
  }

  /**
   * A login past its primary step (else 400 INVALID_AUTH_REQUEST), with its identity and policy
   * as they are now: deleted or disabled since → 401 INVALID_AUTH; a changed policy applies at once.
   */
  async function established(pending: PendingLogin): Promise<Progress> {
    const state = pending.state;
    if (!state) {
      throw new AppError('INVALID_AUTH_REQUEST', {
        message: 'the primary login of this auth request is not done yet',
      });
    }
    pending.identityWithPolicy ??= (async () => {
      const found = await deps.findIdentityWithPolicy(state.identityId);
      if (!found || isDisabled(found.identity, now())) throw identityGone();
      return found;
    })();
    return { ...(await pending.identityWithPolicy), state: structuredClone(state) };
  }

  /** What is owed now, without any JWT of this request (the read-only answers). */
  const owedNow = ({ identity, policy, state }: Progress) =>
    deps.factors.evaluate(identity, policy, state, []);

  /**
   * What is owed once the secondary JWTs of this request's `Authorization` header have counted:
   * one that verifies is recorded in `progress.state` (the caller saves it).
   */
  const countRequestFactors = (ctx: Context, { identity, policy, state }: Progress) =>
    deps.factors.evaluate(identity, policy, state, bearerTokens(ctx.get('authorization')));

  /**
   * Every enrollment step, reading or writing, passes here: the login must owe a TOTP code and
   * nothing else once the secondary JWT of this request has counted (factor-binding.ts).
   * Otherwise a password alone could bind a secret of the caller's choosing to the account, or
   * read the secret of an enrollment its owner has in progress. A JWT that counts here stays
   * counted for the auth request, as at any step.
   */
  async function readyToBind(
    ctx: Context,
    pending: PendingLogin,
    factor: BindableFactor = TOTP_BINDING,
  ): Promise<Progress & { owed: OwedFactors }> {
    const progress = await established(pending);
    const satisfiedBefore = progress.state.satisfied.length;
    const owed = await countRequestFactors(ctx, progress);
    if (progress.state.satisfied.length > satisfiedBefore) await savePending(pending, progress.state);
    assertReadyToBind(owed, factor);
    return { ...progress, owed };
  }

  /**
   * Primary step (password, cert, ext-jwt): 401 INVALID_AUTH on wrong credentials, and the auth
   * request stays usable. Factors this auth request satisfied stay satisfied when the same
   * identity resubmits its primary login (e.g. now with the secondary external JWT).
   */
  async function primaryStep(
    pending: PendingLogin,
    step: Extract<LoginStep, { name: PrimaryMethod }>,
  ): Promise<Progress> {
    const result = await step.check();
    const previous = pending.state?.identityId === result.identity.id ? pending.state : undefined;
    const state: LoginState = {
      identityId: result.identity.id,
      method: step.name,
      amr: [...new Set([...result.amr, ...(previous?.amr ?? [])])],
      configTypes: step.configTypes ?? requestedConfigTypes(pending.params),
      isCertExtendable: result.isCertExtendable,
      authTime: Math.floor(now().getTime() / 1000),
      ...(result.certX5tS256 ? { presentedCertX5tS256: result.certX5tS256 } : {}),
      satisfied: [...new Set(['primary', ...(previous?.satisfied ?? [])])],
      credentials: [
        ...new Set([credentialName(step.name, result.signerId), ...(previous?.credentials ?? [])]),
      ],
    };
    // A passkey with user verification is two factors at once: it pays what a second factor pays.
    if (step.name === 'passkey') satisfy(state, FACTORS.passkey);
    const found = { identity: result.identity, policy: result.policy };
    pending.identityWithPolicy = Promise.resolve(found);
    return { ...found, state };
  }

  /** `totp`: a TOTP code or a recovery code, under the per-identity failure limit. */
  async function totpStep(pending: PendingLogin, code: string): Promise<Progress> {
    const progress = await established(pending);
    await deps.totp.verifyLoginCode(progress.identity.id, code, {
      allowRecovery: true,
      invalidCode: 'INVALID_TOTP_CODE',
    });
    satisfy(progress.state, FACTORS.totp);
    return progress;
  }

  /** `totp-enroll-verify`: a code of the new secret (never a recovery code) saves it. */
  async function totpEnrollVerifyStep(ctx: Context, pending: PendingLogin, code: string): Promise<Progress> {
    const progress = await readyToBind(ctx, pending);
    await deps.totp.verifyEnrollment(progress.identity.id, code, { marker: ownEnrollment(progress.state) });
    satisfy(progress.state, FACTORS.totp);
    return progress;
  }

  const passkeySteps = createPasskeySteps({
    passkeys: deps.passkeys,
    factor: deps.passkeyFactor,
    siteOf: deps.webauthnSiteOf,
    established,
    owedNow,
    readyToBind,
  });

  function runStep(ctx: Context, pending: PendingLogin, step: LoginStep): Promise<Progress> {
    switch (step.name) {
      case 'totp':
        return totpStep(pending, step.code);
      case 'totp-enroll-verify':
        return totpEnrollVerifyStep(ctx, pending, step.code);
      case 'passkey-assertion':
        return passkeySteps.assertionStep(ctx, pending, step.response);
      case 'passkey-register':
        return passkeySteps.registerStep(ctx, pending, { name: step.passkeyName, response: step.response });
      default:
        return primaryStep(pending, step);
    }
  }

  /**
   * Runs a step, then completes the login when nothing is owed any more, else keeps the progress
   * on the auth request and lists the rest. A secondary external JWT in this request's
   * `Authorization` header counts at every step.
   */
  async function advance(ctx: Context, pending: PendingLogin, step: LoginStep): Promise<LoginOutcome> {
    const progress = await runStep(ctx, pending, step);
    const owed = await countRequestFactors(ctx, progress);
    if (owed.authQueries.length > 0) {
      await savePending(pending, progress.state);
      return { kind: 'owes', ...owed };
    }
    await complete(ctx, pending, progress);
    return { kind: 'complete' };
  }

  /** Keeps a partial login on the auth request. */
  async function savePending(pending: PendingLogin, state: LoginState): Promise<void> {
    pending.interaction.result = { svc: state };
    await pending.interaction.persist();
    pending.state = state;
  }

  /**
   * The facts the tokens will carry go into the interaction result, and the provider's resume
   * runs in-process on this request, answering 303 to `redirect_uri?code&state&iss`. The identity
   * is checked once more, as this request read it, against the clock of the completion.
   */
  async function complete(
    ctx: Context,
    pending: PendingLogin,
    { identity, policy, state }: Progress,
  ): Promise<void> {
    if (isDisabled(identity, now())) throw identityGone();
    const amr = amrWithMfa(state);
    const facts: LoginFacts = {
      accountId: identity.id,
      apiSessionId: newId(),
      amr,
      configTypes: state.configTypes,
      isCertExtendable: state.isCertExtendable,
      isAdmin: identity.isAdmin,
      tokenGeneration: identity.tokenGeneration,
      authTime: state.authTime,
      ...boundCertificate(pending, state, policy),
    };
    // One completion per auth request, decided by one conditional statement that marks its row
    // consumed. The row stays (the janitor removes it when it expires): a step of the same auth
    // request still in flight may save it again, and a consumed row keeps it from coming back.
    const consume = async (db: Knex) => {
      if (!(await oidcPayloadsRepository.consume(db, 'Interaction', pending.uid, now()))) {
        throw invalidRequest('auth request already completed');
      }
    };
    let openedSession: CompletedLogin['openedSession'];
    if (policy.sessions.max > 0) {
      // Under the policy's session limit (services/session-limit.ts) the check, any eviction, the
      // consume and the API session commit together: a refused login leaves its auth request
      // usable, and parallel logins of one identity never hold more than the limit. Without a
      // limit, none of these statements is sent.
      openedSession = await deps.sessionLimit.admit(identity.id, async (trx, afterCommit) => {
        await consume(trx);
        const origin = {
          authMethod: state.method ?? null,
          ipAddress: currentRequestScope()?.sourceAddress() ?? null,
        };
        return {
          id: facts.apiSessionId,
          expiresAt: await deps.sessions.open(trx, afterCommit, facts, origin),
        };
      });
    } else {
      await consume(deps.knex);
    }
    pending.interaction.result = {
      login: { accountId: identity.id, amr, ts: state.authTime, remember: false },
      consent: {},
      svc: { ...state, ...facts },
    };
    // Not written back: the resume below reads it from this request (completed-logins.ts).
    const { payload } = await pending.interaction.getValueAndPayload();
    deps.completedLogins.remember(ctx.req, {
      identity,
      interaction: { uid: pending.uid, payload: payload ?? {} },
      ...(openedSession ? { openedSession } : {}),
    });
    await resumeInProcess(pending.entry, ctx, pending.interaction);
  }

  return {
    loadPendingLogin,
    advance,

    /** `GET auth-queries`, `GET totp`: what is owed, read-only (no JWT of this request counts). */
    async owed(pending: PendingLogin): Promise<OwedFactors> {
      return owedNow(await established(pending));
    },
    ...createLoginEnrollment({ totp: deps.totp, readyToBind, savePending }),
    /** `GET passkey`, `GET passkey/register`: the options of the login's next passkey ceremony. */
    passkeyRequestOptions: passkeySteps.requestOptions,
    passkeyRegistrationOptions: passkeySteps.registrationOptions,
  };
}

export type LoginFlow = ReturnType<typeof createLoginFlow>;
