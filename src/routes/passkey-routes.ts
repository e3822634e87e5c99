import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendData, sendEmpty } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import { clientAddress } from '../middleware/request-context.js';
import {
  passkeyOptionsSchema,
  passkeyRegisterSchema,
  passkeyRemoveSchema,
  passkeyRenameSchema,
} from '../schemas/passkey-schemas.js';
import type { PasskeyCreatedView, PasskeyOptionsView, PasskeyView } from '../schemas/passkey-views.js';
import { parseInput } from '../schemas/parse-input.js';
import type { Principal } from '../services/auth/principal.js';
import { creationOptionsView, isRecentSignIn } from '../services/passkeys/passkey-service.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

const PASSKEYS_PATH = '/current-identity/passkeys';

/**
 * Changing the caller's passkeys (adding, renaming, removing) needs a recent sign-in
 * (isRecentSignIn), or the request carries the password or a TOTP code (or recovery code),
 * checked like at a login: failures count toward the same limits.
 */
async function requireRecentAuthentication(
  deps: RouteDeps,
  ctx: Context,
  p: Principal,
  proof: { password?: string; code?: string },
): Promise<void> {
  if (isRecentSignIn(p.authTime)) return;
  if (proof.password !== undefined) {
    const username = (await deps.identities.current(p.identityId)).authenticators.updb?.username;
    if (!username)
      throw new AppError('REAUTHENTICATION_REQUIRED', { message: 'the identity has no password' });
    const result = await deps.passwordMethod({
      username,
      password: proof.password,
      clientAddress: clientAddress(ctx),
    });
    if (result.identity.id !== p.identityId) throw new AppError('INVALID_AUTH');
    return;
  }
  if (proof.code !== undefined) {
    await deps.totp.verifyLoginCode(p.identityId, proof.code);
    return;
  }
  throw new AppError('REAUTHENTICATION_REQUIRED');
}

/**
 * The caller's own passkeys (WebAuthn; an extension beyond the service's specification): register,
 * list, rename, remove. Every endpoint refuses a session whose MFA step is still owed (the
 * authenticate middleware's default). The registration ceremony is bound to the caller's API
 * session: only that session can finish it.
 */
export function passkeyRoutes(router: Router, deps: RouteDeps): void {
  const auth = authenticate(deps.principals);
  const { passkeys, webauthn } = deps;

  router.post(`${PASSKEYS_PATH}/options`, auth, parseBody(), async (ctx: Context) => {
    const site = webauthn.siteFor(ctx.host);
    const proof = parseInput(passkeyOptionsSchema, bodyOf(ctx));
    const p = principalOf(ctx);
    await requireRecentAuthentication(deps, ctx, p, proof);
    const { options, warnings } = await passkeys.registrationOptions(
      { id: p.identityId, name: p.identityName },
      { boundTo: p.sessionId },
      site,
    );
    sendData(ctx, { options: creationOptionsView(options), warnings } satisfies PasskeyOptionsView);
  });

  router.post(PASSKEYS_PATH, auth, parseBody(), async (ctx: Context) => {
    const site = webauthn.siteFor(ctx.host);
    const { name, response, ...proof } = parseInput(passkeyRegisterSchema, bodyOf(ctx));
    const p = principalOf(ctx);
    await requireRecentAuthentication(deps, ctx, p, proof);
    const created = await passkeys.register(p.identityId, { boundTo: p.sessionId }, site, { name, response });
    sendData(
      ctx,
      { id: created.id, name: created.name, createdAt: created.createdAt } satisfies PasskeyCreatedView,
      201,
    );
  });

  router.get(PASSKEYS_PATH, auth, async (ctx: Context) => {
    sendData(ctx, (await passkeys.list(principalOf(ctx).identityId)) satisfies PasskeyView[]);
  });

  router.patch(`${PASSKEYS_PATH}/:id`, auth, parseBody(), async (ctx: Context) => {
    const { name, ...proof } = parseInput(passkeyRenameSchema, bodyOf(ctx));
    const p = principalOf(ctx);
    await requireRecentAuthentication(deps, ctx, p, proof);
    const renamed = await passkeys.rename(p.identityId, pathId(ctx), name);
    sendData(ctx, renamed satisfies PasskeyView);
  });

  router.delete(`${PASSKEYS_PATH}/:id`, auth, parseBody(), async (ctx: Context) => {
    const proof = parseInput(passkeyRemoveSchema, bodyOf(ctx));
    const p = principalOf(ctx);
    await requireRecentAuthentication(deps, ctx, p, proof);
    await passkeys.remove(p.identityId, pathId(ctx), p.identityId);
    sendEmpty(ctx);
  });
}
