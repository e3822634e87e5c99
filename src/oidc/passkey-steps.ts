import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import type { PasskeyFactor } from '../services/mfa/passkey-factor.js';
import { creationOptionsView, type PasskeyService } from '../services/passkeys/passkey-service.js';
import type { WebauthnSite } from '../services/passkeys/webauthn-settings.js';
import { PASSKEY_BINDING, type BindableFactor } from './factor-binding.js';
import type { PendingLogin, Progress } from './login-flow.js';
import { FACTORS, payableByPasskey, satisfy, type OwedFactors } from './second-factors.js';

export interface PasskeyStepsDeps {
  passkeys: Pick<PasskeyService, 'assertionOptions' | 'registrationOptions' | 'register'>;
  /** A second-factor assertion, counted and audited per identity. */
  factor: Pick<PasskeyFactor, 'verify'>;
  /** The WebAuthn site of this request (409 PASSKEYS_UNAVAILABLE when a browser would refuse it). */
  siteOf: (ctx: Context) => WebauthnSite;
  /** The login's progress past its primary step (login-flow.ts). */
  established: (pending: PendingLogin) => Promise<Progress>;
  owedNow: (progress: Progress) => Promise<OwedFactors>;
  /** The login's progress once it may bind `factor`, else the refusal (login-flow.ts). */
  readyToBind: (
    ctx: Context,
    pending: PendingLogin,
    factor: BindableFactor,
  ) => Promise<Progress & { owed: OwedFactors }>;
}

/** A passkey registered mid-login gets this name; the person renames it on the account page or through the API. */
const DEFAULT_PASSKEY_NAME = 'Passkey';

/**
 * The passkey steps of the OIDC login (an extension beyond the specification). Every challenge
 * is bound to the auth request's uid, so an assertion made for one auth request is refused by
 * every other.
 *
 *   requestOptions   before the primary step: passwordless (discoverable, user verification
 *                    required); after it: the identity's passkeys, when the login owes a factor
 *                    that a passkey pays
 *   assertionStep    the second factor: pays the TOTP code or the policy's required passkey
 *   registration     mid-flow, only when a required passkey is all the login owes and the
 *                    identity has none yet (its first passkey; never a further one)
 *
 * The passwordless assertion itself is a primary step (login-flow.ts, routes/primary-logins.ts).
 */
export function createPasskeySteps(deps: PasskeyStepsDeps) {
  const ceremonyOf = (pending: PendingLogin) => ({ boundTo: pending.uid });

  return {
    /** `GET passkey`: the request options of this login's next passkey assertion. */
    async requestOptions(ctx: Context, pending: PendingLogin): Promise<unknown> {
      const site = deps.siteOf(ctx);
      if (!pending.state) {
        return deps.passkeys.assertionOptions({ purpose: 'passwordless' }, ceremonyOf(pending), site);
      }
      const progress = await deps.established(pending);
      const owed = await deps.owedNow(progress);
      if (!owed.authQueries.some(payableByPasskey)) {
        throw new AppError('INVALID_AUTH_REQUEST', {
          message: 'this login owes no factor that a passkey of the identity pays',
        });
      }
      return deps.passkeys.assertionOptions(
        { purpose: 'second-factor', identityId: progress.identity.id },
        ceremonyOf(pending),
        site,
      );
    },

    /** `POST passkey` after the primary step: an assertion of one of the identity's passkeys. */
    async assertionStep(ctx: Context, pending: PendingLogin, response: unknown): Promise<Progress> {
      const progress = await deps.established(pending);
      const site = deps.siteOf(ctx);
      await deps.factor.verify(progress.identity.id, ceremonyOf(pending), site, response, 'INVALID_AUTH');
      satisfy(progress.state, FACTORS.passkey);
      return progress;
    },

    /** `GET passkey/register`: creation options, for a login that owes a required passkey only. */
    async registrationOptions(ctx: Context, pending: PendingLogin): Promise<unknown> {
      const { identity } = await deps.readyToBind(ctx, pending, PASSKEY_BINDING);
      const { options } = await deps.passkeys.registrationOptions(
        { id: identity.id, name: identity.name },
        ceremonyOf(pending),
        deps.siteOf(ctx),
        { firstOnly: true },
      );
      // The same shape as the client API's options (passkey-views.ts).
      return creationOptionsView(options);
    },

    /** `POST passkey/register`: the new passkey is the identity's, and pays the factor it registers. */
    async registerStep(
      ctx: Context,
      pending: PendingLogin,
      input: { name?: string; response: unknown },
    ): Promise<Progress> {
      const progress = await deps.readyToBind(ctx, pending, PASSKEY_BINDING);
      await deps.passkeys.register(
        progress.identity.id,
        ceremonyOf(pending),
        deps.siteOf(ctx),
        { name: input.name ?? DEFAULT_PASSKEY_NAME, response: input.response },
        { firstOnly: true },
      );
      satisfy(progress.state, FACTORS.passkey);
      return progress;
    },
  };
}

export type PasskeySteps = ReturnType<typeof createPasskeySteps>;
