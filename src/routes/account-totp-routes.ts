import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import type { AccountSession } from '../services/account/account-session-service.js';
import { qrDataUrl } from '../services/mfa/qr-code.js';
import { accountOf, formField, noticeFrom, pageSession, seeOther, type Guards } from './account-guards.js';
import { renderRecoveryCodesPage, renderTotpPage, type TotpPageState } from './account-pages.js';
import type { RouteDeps } from './route-deps.js';

const NOTICES: Record<string, string> = {
  'totp-on': 'Your authenticator app is on: signing in now asks for its code.',
  'totp-cancelled': 'The setup was cancelled.',
  'totp-removed': 'Your authenticator app was removed.',
};

/** The enrollment in progress is reached only by the API session of this account page session. */
const reachOf = (s: AccountSession) => ({ startedBySession: s.principal.sessionId });

async function totpState(
  deps: RouteDeps,
  s: AccountSession,
  recoveryCodes?: string[],
): Promise<TotpPageState> {
  const { identityId } = s.principal;
  const detail = await deps.totp.detail(identityId, reachOf(s));
  if (!detail) return { kind: 'none' };
  if (detail.isVerified) {
    return { kind: 'verified', remaining: await deps.totp.remainingRecoveryCodes(identityId) };
  }
  const url = detail.provisioningUrl ?? '';
  const secret = new URL(url).searchParams.get('secret') ?? '';
  return { kind: 'enrolling', qrDataUrl: await qrDataUrl(url), secret, recoveryCodes };
}

/** A wrong code (or too many) shows the page again with the message tied to the code's field. */
async function withCodeErrors(
  ctx: Context,
  deps: RouteDeps,
  fieldId: string,
  work: () => Promise<void>,
): Promise<void> {
  try {
    await work();
  } catch (err) {
    const codeErrors = ['MFA_INVALID_TOKEN', 'INVALID_TOTP_CODE', 'RATE_LIMITED', 'COULD_NOT_VALIDATE'];
    if (!(err instanceof AppError) || !codeErrors.includes(err.code)) throw err;
    for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
    const message =
      err.code === 'RATE_LIMITED'
        ? 'Too many wrong codes. Wait a few minutes, then try again.'
        : err.code === 'COULD_NOT_VALIDATE'
          ? 'Enter the code your app shows.'
          : 'That code is not right. Enter the code your app shows now.';
    const s = accountOf(ctx);
    renderTotpPage(ctx, pageSession(ctx), await totpState(deps, s), {
      status: err.status,
      error: message,
      invalidField: fieldId,
    });
  }
}

/** The authenticator app (TOTP) page of the account page. */
export function accountTotpRoutes(router: Router, deps: RouteDeps, { signedIn, change }: Guards): void {
  const { totp } = deps;
  router.get('/totp', signedIn, async (ctx) => {
    renderTotpPage(ctx, pageSession(ctx), await totpState(deps, accountOf(ctx)), {
      notice: noticeFrom(ctx, NOTICES),
    });
  });

  router.post('/totp/enroll', ...change, async (ctx) => {
    const s = accountOf(ctx);
    try {
      const started = await totp.startEnrollment(
        s.principal.identityId,
        s.principal.identityName,
        s.principal.sessionId,
      );
      renderTotpPage(ctx, pageSession(ctx), await totpState(deps, s, started.recoveryCodes));
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'MFA_EXISTS')) throw err;
      renderTotpPage(ctx, pageSession(ctx), await totpState(deps, s), {
        status: 409,
        error:
          'An authenticator app is already being set up for your identity elsewhere. Finish or remove it there first.',
      });
    }
  });

  router.post('/totp/verify', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await withCodeErrors(ctx, deps, 'code', async () => {
      await totp.verifyEnrollment(s.principal.identityId, formField(ctx, 'code', 16), reachOf(s));
      seeOther(ctx, '/account/totp?done=totp-on');
    });
  });

  router.post('/totp/cancel', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await totp.abandonEnrollment(s.principal.identityId, reachOf(s));
    seeOther(ctx, '/account/totp?done=totp-cancelled');
  });

  router.post('/totp/remove', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await withCodeErrors(ctx, deps, 'remove-code', async () => {
      await totp.remove(s.principal.identityId, formField(ctx, 'remove-code', 32));
      seeOther(ctx, '/account/totp?done=totp-removed');
    });
  });

  router.post('/totp/recovery-codes', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await withCodeErrors(ctx, deps, 'regenerate-code', async () => {
      const codes = await totp.regenerateRecoveryCodes(
        s.principal.identityId,
        formField(ctx, 'regenerate-code', 32),
      );
      renderRecoveryCodesPage(ctx, pageSession(ctx), codes);
    });
  });
}
