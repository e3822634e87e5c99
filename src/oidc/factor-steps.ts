import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import type { Challenge } from '../errors/www-authenticate.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import type { AuthPolicy } from '../repositories/auth-policies-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import { isDisabled } from '../services/auth/identity-status.js';
import type { EnrollmentStart, TotpService } from '../services/mfa/totp-service.js';
import type { AuthQuery, AuthRequest, LoginFlow, LoginState } from './login-flow.js';
import { FACTORS, satisfy, type OwedFactors, type SecondFactors } from './second-factors.js';

export interface FactorStepsDeps {
  login: Pick<LoginFlow, 'savePending' | 'completeLogin'>;
  factors: SecondFactors;
  totp: Pick<
    TotpService,
    | 'verifyLoginCode'
    | 'startMarkedEnrollment'
    | 'verifyEnrollment'
    | 'abandonEnrollment'
    | 'provisioningUrlFor'
  >;
  findIdentity: (id: string) => Promise<Identity | undefined>;
  findPolicy: (id: string) => Promise<AuthPolicy | undefined>;
  now?: () => Date;
}

/** A step's outcome: the provider already answered 303, or factors are still owed (200). */
export type FactorOutcome =
  { kind: 'redirected' } | { kind: 'queries'; authQueries: AuthQuery[]; challenges: Challenge[] };

/** A partial login as it stands now: its state, and its identity and policy read again. */
export interface PendingLogin {
  state: LoginState;
  identity: Identity;
  policy: AuthPolicy;
}

/**
 * The second-factor steps of a partially authenticated auth request (spec 3.1, 3.2; decisions.md
 * §5): the TOTP check, TOTP enrollment mid-flow and the list of what is still owed. Each step
 * needs the primary login done (else 400 INVALID_AUTH_REQUEST), reads the identity and its policy
 * again (deleted or disabled since → 401 INVALID_AUTH; a changed policy applies at once), and
 * completes the login exactly like the primary endpoints when nothing is owed any more.
 */
export function createFactorSteps(deps: FactorStepsDeps) {
  const now = deps.now ?? (() => new Date());

  async function pendingLogin(request: AuthRequest): Promise<PendingLogin> {
    const state = request.state;
    if (!state) {
      throw new AppError('INVALID_AUTH_REQUEST', {
        message: 'the primary login of this auth request is not done yet',
      });
    }
    const identity = await deps.findIdentity(state.identityId);
    const policy = identity && (await deps.findPolicy(identity.authPolicyId));
    if (!identity || !policy || isDisabled(identity, now())) {
      throw new AppError('INVALID_AUTH', { detail: 'identity deleted or disabled during the login' });
    }
    return { state: { ...state, amr: [...state.amr], satisfied: [...state.satisfied] }, identity, policy };
  }

  /**
   * Spec 5.3 item 3: enrollment mid-flow is for an identity that owes a TOTP code. Otherwise a
   * password alone could bind a secret of the caller's choosing to the account, or read the secret
   * of an enrollment its owner has in progress. Every enrollment step, reading or writing, passes here.
   */
  async function pendingTotpEnrollment(request: AuthRequest): Promise<PendingLogin & { owed: OwedFactors }> {
    const pending = await pendingLogin(request);
    const owed = await deps.factors.evaluate(pending.identity, pending.policy, pending.state, []);
    if (!owed.authQueries.some((q) => q.typeId === 'MFA')) {
      throw new AppError('INVALID_AUTH_REQUEST', { message: 'this login does not owe a TOTP code' });
    }
    return { ...pending, owed };
  }

  /** The marker of the enrollment this login started; one it did not start is nobody's here. */
  function ownEnrollment(state: LoginState): string {
    if (state.totpEnrollment) return state.totpEnrollment;
    throw new AppError('NOT_FOUND', { message: 'this login has no TOTP enrollment in progress' });
  }

  /** Completes the login when nothing is owed, else keeps the progress and lists the rest. */
  async function advance(ctx: Context, request: AuthRequest, pending: PendingLogin): Promise<FactorOutcome> {
    const { state, identity, policy } = pending;
    const owed = await deps.factors.evaluate(identity, policy, state, bearerTokens(ctx.get('authorization')));
    if (owed.authQueries.length === 0) {
      await deps.login.completeLogin(ctx, request, state);
      return { kind: 'redirected' };
    }
    await deps.login.savePending(request, state);
    return { kind: 'queries', ...owed };
  }

  return {
    pendingLogin,

    /** `GET /oidc/login/auth-queries`: read-only, so no JWT of this request is taken into account. */
    async owed(request: AuthRequest): Promise<OwedFactors> {
      const { state, identity, policy } = await pendingLogin(request);
      return deps.factors.evaluate(identity, policy, state, []);
    },

    /** `POST /oidc/login/totp`: a TOTP code or a recovery code (decisions.md §5, §7). */
    async submitTotp(ctx: Context, request: AuthRequest, code: string): Promise<FactorOutcome> {
      const pending = await pendingLogin(request);
      await deps.totp.verifyLoginCode(pending.identity.id, code, {
        allowRecovery: true,
        invalidCode: 'INVALID_TOTP_CODE',
      });
      satisfy(pending.state, FACTORS.totp);
      return advance(ctx, request, pending);
    },

    /** `GET /oidc/login/totp/enroll`: what is owed, for a login that owes a TOTP code only. */
    async owedForEnrollment(request: AuthRequest): Promise<OwedFactors> {
      return (await pendingTotpEnrollment(request)).owed;
    },

    /**
     * `POST /oidc/login/totp/enroll`: 409 MFA_EXISTS when in progress or verified. The
     * auth request keeps the enrollment's marker: its other enrollment steps reach only this one.
     */
    async startEnrollment(request: AuthRequest): Promise<EnrollmentStart> {
      const { identity, state } = await pendingTotpEnrollment(request);
      const { start, marker } = await deps.totp.startMarkedEnrollment(identity.id, identity.name);
      await deps.login.savePending(request, { ...state, totpEnrollment: marker });
      return start;
    },

    /** The provisioning URL of the enrollment this login started, for the HTML page's QR code. */
    async enrollmentUrl(request: AuthRequest): Promise<string | undefined> {
      const { identity, state } = await pendingTotpEnrollment(request);
      return state.totpEnrollment && deps.totp.provisioningUrlFor(identity.id, state.totpEnrollment);
    },

    /**
     * `POST /oidc/login/totp/enroll/verify`: a TOTP code of the new secret (never a recovery
     * code) saves the configuration and satisfies the TOTP factor of this auth request.
     */
    async verifyEnrollment(ctx: Context, request: AuthRequest, code: string): Promise<FactorOutcome> {
      const pending = await pendingTotpEnrollment(request);
      await deps.totp.verifyEnrollment(pending.identity.id, code, ownEnrollment(pending.state));
      satisfy(pending.state, FACTORS.totp);
      return advance(ctx, request, pending);
    },

    /** `DELETE /oidc/login/totp/enroll`: abandons the enrollment this login started (404 when none). */
    async abandonEnrollment(request: AuthRequest): Promise<void> {
      const { identity, state } = await pendingTotpEnrollment(request);
      await deps.totp.abandonEnrollment(identity.id, ownEnrollment(state));
    },
  };
}

export type FactorSteps = ReturnType<typeof createFactorSteps>;
