import { MAX_CONFIG_TYPES } from '../schemas/authenticate-schemas.js';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { newId } from '../crypto/random.js';
import type { AuthPolicy } from '../repositories/auth-policies-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { isDisabled } from '../services/auth/identity-status.js';
import type { PrimaryAuthResult } from '../services/auth/primary-result.js';
import { CLIENT_ID } from './create-provider.js';
import type { IssuerEntry, IssuerRegistry } from './issuer-registry.js';
import type { LoginFacts } from './oidc-sessions.js';
import { resumeInProcess } from './resume-in-process.js';

/** An item of `authQueries` (spec 2.4, decisions.md §5). */
export interface AuthQuery {
  typeId: string;
  [field: string]: unknown;
}

/** What one auth request has established so far; kept in `interaction.result.svc`. */
export interface LoginState {
  identityId: string;
  /** The primary method used: `password`, `cert`, `ext-jwt`. */
  method: string;
  amr: string[];
  configTypes: string[];
  isCertExtendable: boolean;
  /** Epoch seconds of the primary authentication (`auth_time`). */
  authTime: number;
  /** Factors satisfied for this auth request, e.g. `primary`, later `totp` (issue 5). */
  satisfied: string[];
  /**
   * The credentials verified for this auth request, each once: `password`, `cert`, `totp`,
   * `ext-jwt:<signer id>`. A JWT that satisfies both the primary and the secondary factor (same
   * signer) is one credential; JWTs of two signers are two. More than one adds `mfa` to `amr`.
   */
  credentials: string[];
  /**
   * The TOTP enrollment this auth request started mid-flow (a marker from the TOTP service): the
   * only enrollment its steps may show, verify or abandon, so a password alone never reaches an
   * enrollment the identity's owner has in progress.
   */
  totpEnrollment?: string;
}

/** A verified credential as `LoginState.credentials` names it. */
export const credentialName = (method: string, signerId: string | undefined): string =>
  signerId ? `ext-jwt:${signerId}` : method;

/** RFC 8176 `mfa`: more than one credential was verified, whatever their `amr` values. */
export function amrWithMfa(state: Pick<LoginState, 'amr' | 'credentials'>): string[] {
  const multiFactor = new Set(state.credentials ?? []).size > 1;
  return multiFactor && !state.amr.includes('mfa') ? [...state.amr, 'mfa'] : state.amr;
}

/**
 * Second-factor hook (issue 5): the queries still owed after the primary check. An empty list
 * completes the login; otherwise the endpoint answers `200 {authQueries}`. `ctx` is the login
 * request: its `Authorization` header may carry the secondary external JWT (spec 4.2 note 3); a
 * factor found satisfied there is recorded in `state` (its `satisfied` and `amr`).
 */
export type OutstandingFactors = (
  identity: Identity,
  policy: AuthPolicy,
  state: LoginState,
  ctx: Context,
) => Promise<AuthQuery[]>;

export const noOutstandingFactors: OutstandingFactors = async () => [];

/** One pending authorization request (an oidc-provider Interaction of prompt `login`). */
export interface AuthRequest {
  uid: string;
  /** The authorization request's parameters (client_id, scope, svc_ct, …). */
  params: Record<string, unknown>;
  /** Set after a primary login whose factors are still outstanding. */
  state?: LoginState;
  /** The issuer the request was made to: it finishes there, whatever host the login used. */
  entry: IssuerEntry;
  interaction: InteractionLike;
}

interface InteractionLike {
  uid: string;
  returnTo: string;
  params: Record<string, unknown>;
  prompt: { name: string };
  result?: Record<string, unknown>;
  persist(): Promise<unknown>;
}

export type LoginOutcome = { kind: 'queries'; authQueries: AuthQuery[] } | { kind: 'redirected' };

export interface LoginFlowDeps {
  knex: Knex;
  registry: IssuerRegistry;
  findIdentity: (id: string) => Promise<Identity | undefined>;
  outstandingFactors?: OutstandingFactors;
  now?: () => Date;
}

const invalidRequest = (detail: string) => new AppError('INVALID_AUTH_REQUEST', { detail });

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
 * The OIDC login as a list of named steps (spec 3.1, decisions.md §5): load the auth request →
 * primary check → outstanding factors → complete (API session, in-process resume, 303).
 */
export function createLoginFlow(deps: LoginFlowDeps) {
  const now = deps.now ?? (() => new Date());
  const outstandingFactors = deps.outstandingFactors ?? noOutstandingFactors;

  /** Step 1. Unknown, expired, finished or foreign auth requests: 400 INVALID_AUTH_REQUEST. */
  async function loadAuthRequest(ctx: Context, id: unknown): Promise<AuthRequest> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 128)
      throw invalidRequest('no auth request id');
    const current = deps.registry.pick(ctx.state.listener, ctx.req.headers.host);
    if (!current) throw invalidRequest('no issuer');
    const interaction = (await current.provider.Interaction.find(id)) as unknown as
      InteractionLike | undefined;
    if (!interaction) throw invalidRequest('unknown or expired auth request');
    if (interaction.prompt?.name !== 'login' || interaction.params.client_id !== CLIENT_ID) {
      throw invalidRequest('not a login request');
    }
    if (interaction.result?.login) throw invalidRequest('auth request already completed');
    // Only an auth request begun on this listener continues here, under its own issuer.
    const entry = deps.registry.pick(ctx.state.listener, new URL(interaction.returnTo).host);
    if (!entry) throw invalidRequest('the issuer of this auth request is gone');
    const state = interaction.result?.svc as LoginState | undefined;
    return { uid: interaction.uid, params: interaction.params, state, entry, interaction };
  }

  /** Step 2 → 4 for a primary login endpoint. */
  async function primaryLogin(
    ctx: Context,
    request: AuthRequest,
    input: { method: string; configTypes?: string[]; primary: () => Promise<PrimaryAuthResult> },
  ): Promise<LoginOutcome> {
    const result = await input.primary(); // 401 INVALID_AUTH; the request stays usable
    // decisions.md §5: factors satisfied for this auth request stay satisfied when the same
    // identity resubmits the primary login (e.g. now with the secondary external JWT).
    const previous = request.state?.identityId === result.identity.id ? request.state : undefined;
    const state: LoginState = {
      identityId: result.identity.id,
      method: input.method,
      amr: [...new Set([...result.amr, ...(previous?.amr ?? [])])],
      configTypes: input.configTypes ?? requestedConfigTypes(request.params),
      isCertExtendable: result.isCertExtendable,
      authTime: Math.floor(now().getTime() / 1000),
      satisfied: [...new Set(['primary', ...(previous?.satisfied ?? [])])],
      credentials: [
        ...new Set([credentialName(input.method, result.signerId), ...(previous?.credentials ?? [])]),
      ],
    };
    const authQueries = await outstandingFactors(result.identity, result.policy, state, ctx);
    if (authQueries.length > 0) {
      await savePending(request, state);
      return { kind: 'queries', authQueries };
    }
    await completeLogin(ctx, request, state);
    return { kind: 'redirected' };
  }

  /** Keeps a partial login on the auth request (spec 3.1 "partially authenticated"). */
  async function savePending(request: AuthRequest, state: LoginState): Promise<void> {
    request.interaction.result = { svc: state };
    await request.interaction.persist();
    request.state = state;
  }

  /** The identity as it is now: deleted or disabled since the last step → the login fails. */
  async function recheckIdentity(state: LoginState): Promise<Identity> {
    const identity = await deps.findIdentity(state.identityId);
    if (!identity || isDisabled(identity, now())) {
      throw new AppError('INVALID_AUTH', { detail: 'identity deleted or disabled during the login' });
    }
    return identity;
  }

  /**
   * Step 4, also called by the TOTP endpoints once every factor is satisfied: the facts the
   * tokens will carry go into the interaction result, and the provider's resume runs in-process
   * on this request, answering 303 to `redirect_uri?code&state&iss`.
   */
  async function completeLogin(ctx: Context, request: AuthRequest, state: LoginState): Promise<void> {
    const identity = await recheckIdentity(state);
    // One completion per auth request, decided by one atomic statement.
    if (!(await oidcPayloadsRepository.consume(deps.knex, 'Interaction', request.uid, now()))) {
      throw invalidRequest('auth request already being completed');
    }
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
    };
    request.interaction.result = {
      login: { accountId: identity.id, amr, ts: state.authTime, remember: false },
      consent: {},
      svc: { ...state, ...facts },
    };
    await request.interaction.persist();
    await resumeInProcess(request.entry, ctx, request.interaction);
  }

  return { loadAuthRequest, primaryLogin, savePending, completeLogin };
}

export type LoginFlow = ReturnType<typeof createLoginFlow>;
