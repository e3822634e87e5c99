import type Router from '@koa/router';
import type { Context } from 'koa';
import { isAppError } from '../errors/app-error.js';
import type { Challenge } from '../errors/www-authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import type { Oidc } from '../oidc/create-oidc.js';
import type { FactorOutcome, FactorSteps } from '../oidc/factor-steps.js';
import type { AuthQuery, AuthRequest } from '../oidc/login-flow.js';
import { mfaCodeSchema } from '../schemas/mfa-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { EnrollmentStart } from '../services/mfa/totp-service.js';
import { qrDataUrl } from '../services/mfa/qr-code.js';
import {
  ENROLL_PATH,
  renderEnrollmentPage,
  renderOwedPage,
  renderTotpPage,
  TOTP_PATH,
} from './oidc-factor-pages.js';
import { authRequestIdOf, isHtmlForm, sendOwed, setOwedHeaders, wantsHtml } from './oidc-login-http.js';

/** Refusals a browser form gets as the same page again, with the message (and Retry-After). */
const PAGE_ERRORS = new Set(['INVALID_TOTP_CODE', 'MFA_INVALID_TOKEN', 'RATE_LIMITED', 'MFA_EXISTS']);

/** The enrollment page: the QR code of the enrollment in progress, or the start button. */
async function showEnrollment(
  ctx: Context,
  steps: FactorSteps,
  request: AuthRequest,
  options: { start?: EnrollmentStart; status?: number; error?: string } = {},
): Promise<void> {
  const url = options.start?.provisioningUrl ?? (await steps.enrollmentUrl(request));
  const view = url
    ? { provisioningUrl: url, qrDataUrl: await qrDataUrl(url), recoveryCodes: options.start?.recoveryCodes }
    : {};
  renderEnrollmentPage(ctx, request.uid, view, options);
}

/** What is still owed, as a page: TOTP entry, TOTP enrollment, or what only the app can send. */
async function showOwed(
  ctx: Context,
  steps: FactorSteps,
  request: AuthRequest,
  owed: { authQueries: AuthQuery[]; challenges: Challenge[] },
): Promise<void> {
  const mfa = owed.authQueries.find((q) => q.typeId === 'MFA');
  if (mfa?.isTotpEnrolled) renderTotpPage(ctx, request.uid);
  else if (mfa) await showEnrollment(ctx, steps, request);
  else renderOwedPage(ctx, owed.authQueries);
  setOwedHeaders(ctx, owed.authQueries, owed.challenges);
}

/**
 * Answers a login step (spec 3.1): the provider already sent its 303 with the code, or 200 with
 * the factors still owed (a page for a browser form).
 */
export async function answerOutcome(
  ctx: Context,
  steps: FactorSteps,
  request: AuthRequest,
  outcome: FactorOutcome,
): Promise<void> {
  if (outcome.kind === 'redirected') return;
  if (isHtmlForm(ctx)) return showOwed(ctx, steps, request, outcome);
  sendOwed(ctx, outcome.authQueries, outcome.challenges);
}

/** Runs a form step; a refusal shown on a page is rendered by `page` instead of the JSON envelope. */
async function withPageErrors(
  ctx: Context,
  work: () => Promise<void>,
  page: (status: number, error: string) => Promise<void> | void,
): Promise<void> {
  try {
    await work();
  } catch (err) {
    if (!(isAppError(err) && PAGE_ERRORS.has(err.code) && isHtmlForm(ctx))) throw err;
    for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
    await page(err.status, err.message);
  }
}

/**
 * The second-factor endpoints of the OIDC login (spec 4.2, 3.1, 3.2; decisions.md §5):
 * `GET /oidc/login/auth-queries`, `GET|POST /oidc/login/totp`, `GET|POST|DELETE
 * /oidc/login/totp/enroll`, `POST /oidc/login/totp/enroll/verify`. GET with `Accept: text/html`
 * gives the TOTP and enrollment pages.
 */
export function oidcFactorRoutes(router: Router, oidc: Oidc, steps: FactorSteps): void {
  const load = (ctx: Context, body?: Record<string, unknown>) =>
    oidc.login.loadAuthRequest(ctx, authRequestIdOf(ctx, body));
  const codeOf = (body: Record<string, unknown>) => parseInput(mfaCodeSchema, body).code;

  router.get('/oidc/login/auth-queries', async (ctx: Context) => {
    const owed = await steps.owed(await load(ctx));
    sendOwed(ctx, owed.authQueries, owed.challenges);
  });

  router.get(TOTP_PATH, async (ctx: Context) => {
    const request = await load(ctx);
    const owed = await steps.owed(request);
    if (wantsHtml(ctx)) return renderTotpPage(ctx, request.uid);
    sendOwed(ctx, owed.authQueries, owed.challenges);
  });

  router.post(TOTP_PATH, parseBody(), async (ctx: Context) => {
    const body = bodyOf(ctx);
    const request = await load(ctx, body);
    const code = codeOf(body);
    await withPageErrors(
      ctx,
      async () => answerOutcome(ctx, steps, request, await steps.submitTotp(ctx, request, code)),
      (status, error) => renderTotpPage(ctx, request.uid, { status, error }),
    );
  });

  router.get(ENROLL_PATH, async (ctx: Context) => {
    const request = await load(ctx);
    const owed = await steps.owedForEnrollment(request);
    if (wantsHtml(ctx)) return showEnrollment(ctx, steps, request);
    sendOwed(ctx, owed.authQueries, owed.challenges);
  });

  router.post(ENROLL_PATH, parseBody(), async (ctx: Context) => {
    const request = await load(ctx, bodyOf(ctx));
    await withPageErrors(
      ctx,
      async () => {
        const start = await steps.startEnrollment(request);
        if (isHtmlForm(ctx)) return showEnrollment(ctx, steps, request, { start, status: 201 });
        ctx.status = 201; // the spec 2.7 body, as it is
        ctx.body = start;
      },
      (status, error) => showEnrollment(ctx, steps, request, { status, error }),
    );
  });

  router.delete(ENROLL_PATH, parseBody(), async (ctx: Context) => {
    await steps.abandonEnrollment(await load(ctx, bodyOf(ctx)));
    ctx.status = 200;
    ctx.body = {};
  });

  router.post(`${ENROLL_PATH}/verify`, parseBody(), async (ctx: Context) => {
    const body = bodyOf(ctx);
    const request = await load(ctx, body);
    const code = codeOf(body);
    await withPageErrors(
      ctx,
      async () => answerOutcome(ctx, steps, request, await steps.verifyEnrollment(ctx, request, code)),
      (status, error) => showEnrollment(ctx, steps, request, { status, error }),
    );
  });
}
