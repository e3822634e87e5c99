import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendData } from '../errors/envelope.js';
import { passkeyRenameSchema } from '../schemas/passkey-schemas.js';
import type { PasskeyCreatedView, PasskeyOptionsView } from '../schemas/passkey-views.js';
import { parseInput } from '../schemas/parse-input.js';
import type { AccountSession } from '../services/account/account-session-service.js';
import { creationOptionsView, isRecentSignIn } from '../services/passkeys/passkey-service.js';
import { ACCOUNT_PASSKEY_SCRIPT } from './account-passkey-script.js';
import {
  ACCOUNT_SCRIPT_PATH,
  renderAccountErrorPage,
  renderPasskeysPage,
  type PasskeyAdding,
} from './account-pages.js';
import { accountOf, noticeFrom, pageSession, seeOther, type Guards } from './account-guards.js';
import type { RouteDeps } from './route-deps.js';

const NOTICES: Record<string, string> = {
  'passkey-added': 'The passkey was added.',
  'passkey-renamed': 'The passkey was renamed.',
  'passkey-removed': 'The passkey was removed.',
};

/** The page session's sign-in (the ID token's `auth_time`) is recent enough to change passkeys. */
const recent = (s: AccountSession) => isRecentSignIn(s.authTime);

/** What the page says when a rename or removal comes after an old sign-in. */
const SIGN_IN_AGAIN = 'Sign in again (within five minutes) to rename or remove a passkey.';

function adding(deps: RouteDeps, ctx: Context, s: AccountSession): PasskeyAdding {
  const reason = deps.webauthn.unavailableReason(ctx.host);
  if (reason !== undefined) return { kind: 'unavailable', reason };
  return recent(s) ? { kind: 'ready' } : { kind: 'reauthenticate' };
}

/**
 * Registration needs a recent sign-in, as on the client API (within five minutes: a
 * session left open on a shared computer cannot add lasting access); the page offers a fresh sign-in instead of asking for the password.
 */
function requireRecent(s: AccountSession): void {
  if (!recent(s))
    throw new AppError('REAUTHENTICATION_REQUIRED', { message: 'sign in again to add a passkey' });
}

/** The passkeys page and its script's two JSON endpoints (passkeys are an extension of the spec). */
export function accountPasskeyRoutes(
  router: Router,
  deps: RouteDeps,
  { signedIn, change, changeJson }: Guards,
): void {
  const { passkeys, webauthn } = deps;
  const page = async (ctx: Context, o: { error?: string; invalidField?: string; status?: number } = {}) => {
    const s = accountOf(ctx);
    const notice = noticeFrom(ctx, NOTICES);
    renderPasskeysPage(
      ctx,
      pageSession(ctx),
      await passkeys.list(s.principal.identityId),
      adding(deps, ctx, s),
      {
        notice,
        ...o,
      },
    );
  };

  // The router's prefix is `/account`.
  router.get(ACCOUNT_SCRIPT_PATH.replace(/^\/account/, ''), (ctx: Context) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = ACCOUNT_PASSKEY_SCRIPT;
  });

  router.get('/passkeys', signedIn, (ctx: Context) => page(ctx));

  router.post('/passkeys/options', ...changeJson, async (ctx: Context) => {
    const s = accountOf(ctx);
    const site = webauthn.siteFor(ctx.host);
    requireRecent(s);
    const { options, warnings } = await passkeys.registrationOptions(
      { id: s.principal.identityId, name: s.principal.identityName },
      { boundTo: s.id },
      site,
    );
    sendData(ctx, { options: creationOptionsView(options), warnings } satisfies PasskeyOptionsView);
  });

  router.post('/passkeys/register', ...changeJson, async (ctx: Context) => {
    const s = accountOf(ctx);
    const site = webauthn.siteFor(ctx.host);
    requireRecent(s);
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    const { name } = parseInput(passkeyRenameSchema, { name: body.name });
    const created = await passkeys.register(s.principal.identityId, { boundTo: s.id }, site, {
      name,
      response: body.response,
    });
    sendData(
      ctx,
      { id: created.id, name: created.name, createdAt: created.createdAt } satisfies PasskeyCreatedView,
      201,
    );
  });

  // Without the script the add form posts here: say what is missing rather than fail silently.
  router.post('/passkeys/add', ...change, (ctx: Context) => {
    renderAccountErrorPage(
      ctx,
      400,
      'Adding a passkey needs this page’s script: allow JavaScript for this site and try again.',
      pageSession(ctx),
    );
  });

  router.post('/passkeys/rename', ...change, async (ctx: Context) => {
    const s = accountOf(ctx);
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    const id = typeof body.id === 'string' ? body.id : '';
    if (!recent(s)) return page(ctx, { status: 403, error: SIGN_IN_AGAIN });
    const parsed = passkeyRenameSchema.safeParse({ name: body[`name-${id}`] });
    if (!parsed.success) {
      return page(ctx, {
        status: 400,
        error: 'Enter a name of at most 64 characters.',
        invalidField: `name-${id}`,
      });
    }
    await passkeys.rename(s.principal.identityId, id, parsed.data.name);
    seeOther(ctx, '/account/passkeys?done=passkey-renamed');
  });

  router.post('/passkeys/remove', ...change, async (ctx: Context) => {
    const s = accountOf(ctx);
    if (!recent(s)) return page(ctx, { status: 403, error: SIGN_IN_AGAIN });
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    await passkeys.remove(
      s.principal.identityId,
      typeof body.id === 'string' ? body.id : '',
      s.principal.identityId,
    );
    seeOther(ctx, '/account/passkeys?done=passkey-removed');
  });
}
