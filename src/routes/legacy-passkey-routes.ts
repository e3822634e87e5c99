import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendData } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import { bodyOf } from '../middleware/parse-body.js';
import { passkeyAssertionSchema } from '../schemas/passkey-login-schemas.js';
import type { PasskeyAssertionOptionsView, PasskeyCeremonyView } from '../schemas/passkey-login-views.js';
import { parseInput } from '../schemas/parse-input.js';
import type { Principal } from '../services/auth/principal.js';
import { webauthnSiteOf } from './primary-logins.js';
import { completeSessionMfa } from './mfa-routes.js';
import type { RouteDeps } from './route-deps.js';

/**
 * `POST /authenticate/mfa` with `{passkey}`: an assertion of one of the identity's passkeys,
 * whose challenge `authenticate/mfa/passkey/options` bound to this API session. Counted with the
 * wrong TOTP codes of the identity. False when the body carries no passkey (a code follows).
 */
export async function passkeyPaidMfa(ctx: Context, deps: RouteDeps, principal: Principal): Promise<boolean> {
  const body = bodyOf(ctx);
  if (!Object.hasOwn(body, 'passkey')) return false;
  const { passkey } = parseInput(passkeyAssertionSchema, body);
  const site = webauthnSiteOf(deps)(ctx);
  const ceremony = { boundTo: principal.sessionId };
  await deps.passkeyFactor.verify(principal.identityId, ceremony, site, passkey, 'MFA_INVALID_TOKEN');
  await completeSessionMfa(deps, principal, 'pop');
  return true;
}

/**
 * Passkeys in the legacy login (an extension beyond the specification):
 *
 *   POST /authenticate/passkey/options       passwordless: options and a ceremony id, which
 *                                            `POST /authenticate?method=passkey` sends back
 *   POST /authenticate/mfa/passkey/options   the MFA step: options bound to the caller's session
 */
export function legacyPasskeyRoutes(router: Router, deps: RouteDeps): void {
  const siteOf = webauthnSiteOf(deps);

  router.post('/authenticate/passkey/options', async (ctx: Context) => {
    const ceremony = await deps.passkeyMethod.legacyCeremony(siteOf(ctx));
    sendData(ctx, ceremony satisfies PasskeyCeremonyView);
  });

  router.post(
    '/authenticate/mfa/passkey/options',
    authenticate(deps.principals, { allowMfaPending: true }),
    async (ctx: Context) => {
      const principal = principalOf(ctx);
      const site = siteOf(ctx);
      if ((await deps.passkeys.count(principal.identityId)) === 0) {
        throw new AppError('NOT_FOUND', { message: 'this identity has no passkey' });
      }
      const options = await deps.passkeys.assertionOptions(
        { purpose: 'second-factor', identityId: principal.identityId },
        { boundTo: principal.sessionId },
        site,
      );
      sendData(ctx, { options } satisfies PasskeyAssertionOptionsView);
    },
  );
}
