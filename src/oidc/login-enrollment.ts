import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import type { EnrollmentStart, TotpService } from '../services/mfa/totp-service.js';
import type { PendingLogin, Progress } from './login-flow.js';
import type { LoginState } from './login-state.js';
import type { OwedFactors } from './second-factors.js';

export interface LoginEnrollmentDeps {
  totp: Pick<TotpService, 'startMarkedEnrollment' | 'abandonEnrollment' | 'provisioningUrlFor'>;
  /** The login's progress once it may bind a factor, else the refusal (login-flow.ts). */
  readyToBind: (ctx: Context, pending: PendingLogin) => Promise<Progress & { owed: OwedFactors }>;
  savePending: (pending: PendingLogin, state: LoginState) => Promise<void>;
}

/** The marker of the enrollment this login started; one it did not start is nobody's here. */
export function ownEnrollment(state: LoginState): string {
  if (state.totpEnrollment) return state.totpEnrollment;
  throw new AppError('NOT_FOUND', { message: 'this login has no TOTP enrollment in progress' });
}

/**
 * TOTP enrollment mid-flow, apart from its verify (a step of the login): each starts, shows or
 * abandons the enrollment of a pending login that may bind a factor, and none advances the login.
 */
export function createLoginEnrollment(deps: LoginEnrollmentDeps) {
  return {
    /** `GET totp/enroll`: what is owed, for a login that owes a TOTP code only. */
    async owedForEnrollment(ctx: Context, pending: PendingLogin): Promise<OwedFactors> {
      return (await deps.readyToBind(ctx, pending)).owed;
    },

    /**
     * `POST totp/enroll`: 409 MFA_EXISTS when in progress or verified. The auth request keeps
     * the enrollment's marker: its other enrollment steps reach only this one.
     */
    async startEnrollment(ctx: Context, pending: PendingLogin): Promise<EnrollmentStart> {
      const { identity, state } = await deps.readyToBind(ctx, pending);
      const { start, marker } = await deps.totp.startMarkedEnrollment(identity.id, identity.name);
      await deps.savePending(pending, { ...state, totpEnrollment: marker });
      return start;
    },

    /** The provisioning URL of the enrollment this login started, for the HTML page's QR code. */
    async enrollmentUrl(ctx: Context, pending: PendingLogin): Promise<string | undefined> {
      const { identity, state } = await deps.readyToBind(ctx, pending);
      return (
        state.totpEnrollment && deps.totp.provisioningUrlFor(identity.id, { marker: state.totpEnrollment })
      );
    },

    /** `DELETE totp/enroll`: abandons the enrollment this login started (404 when none). */
    async abandonEnrollment(ctx: Context, pending: PendingLogin): Promise<void> {
      const { identity, state } = await deps.readyToBind(ctx, pending);
      await deps.totp.abandonEnrollment(identity.id, { marker: ownEnrollment(state) });
    },
  };
}
