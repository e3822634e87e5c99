import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendData, sendEmpty } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import type { Principal } from '../services/auth/principal.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import { mfaCodeSchema, optionalMfaCodeSchema } from '../schemas/mfa-schemas.js';
import type {
  RecoveryCodesRemainingView,
  RecoveryCodesView,
  TotpDetailView,
  TotpEnrollmentView,
} from '../schemas/mfa-views.js';
import { parseInput } from '../schemas/parse-input.js';
import { qrPng } from '../services/mfa/qr-code.js';
import type { EnrollmentReach } from '../services/mfa/totp-service.js';
import { withSecondFactor } from '../services/session-service.js';
import type { RouteDeps } from './route-deps.js';

/** Completes the MFA step of a legacy session that still owes it: a TOTP code (`otp`) or a passkey (`pop`). */
export async function completeSessionMfa(
  deps: RouteDeps,
  principal: Principal,
  factor: 'otp' | 'pop' = 'otp',
): Promise<void> {
  if (principal.kind === 'legacy' && principal.mfaPending) {
    await deps.sessions.completeMfa(
      principal.sessionId,
      principal.identityId,
      withSecondFactor(principal.amr, factor),
    );
  }
}

const MFA_PATH = '/current-identity/mfa';

/**
 * An unverified enrollment is reached (seen, shown as a QR code, verified, its recovery codes
 * counted) only by the API session that started it (`z_asid` for a bearer token), whatever its MFA
 * state: a session opened with the password alone, which every OIDC login without a required
 * factor is, must not read the owner's secret and later pass the second factor with it.
 */
const reachOf = (p: Principal): EnrollmentReach => ({ startedBySession: p.sessionId });

/**
 * Self-service TOTP. Every endpoint also answers a session whose MFA step is
 * still owed: an identity whose policy requires TOTP but has none must be able to enroll. Every
 * session reaches only its own enrollment in progress (`reachOf`).
 */
export function mfaRoutes(router: Router, deps: RouteDeps): void {
  const auth = authenticate(deps.principals, { allowMfaPending: true });
  const { totp } = deps;

  router.post(MFA_PATH, auth, async (ctx: Context) => {
    const p = principalOf(ctx);
    sendData(
      ctx,
      (await totp.startEnrollment(p.identityId, p.identityName, p.sessionId)) satisfies TotpEnrollmentView,
      201,
    );
  });

  router.get(MFA_PATH, auth, async (ctx: Context) => {
    const p = principalOf(ctx);
    const detail = await totp.detail(p.identityId, reachOf(p));
    if (!detail) throw new AppError('NOT_FOUND', { message: 'no TOTP configuration' });
    sendData(ctx, {
      ...detail,
      createdAt: detail.createdAt.toISOString(),
      verifiedAt: detail.verifiedAt?.toISOString() ?? null,
    } satisfies TotpDetailView);
  });

  router.delete(MFA_PATH, auth, parseBody(), async (ctx: Context) => {
    const { code } = parseInput(optionalMfaCodeSchema, bodyOf(ctx));
    await totp.remove(principalOf(ctx).identityId, code ?? (ctx.get('mfa-validation-code') || undefined));
    sendEmpty(ctx);
  });

  router.post(`${MFA_PATH}/verify`, auth, parseBody(), async (ctx: Context) => {
    const { code } = parseInput(mfaCodeSchema, bodyOf(ctx));
    const p = principalOf(ctx);
    await totp.verifyEnrollment(p.identityId, code, reachOf(p));
    // The code just proved the new factor: a session waiting for it is complete (as Ziti does).
    await completeSessionMfa(deps, p);
    sendEmpty(ctx);
  });

  router.get(`${MFA_PATH}/qr-code`, auth, async (ctx: Context) => {
    const p = principalOf(ctx);
    const url = await totp.provisioningUrlFor(p.identityId, reachOf(p));
    if (!url) throw new AppError('NOT_FOUND', { message: 'no TOTP enrollment is in progress' });
    ctx.type = 'image/png';
    ctx.body = await qrPng(url);
  });

  router.get(`${MFA_PATH}/recovery-codes`, auth, async (ctx: Context) => {
    const p = principalOf(ctx);
    sendData(ctx, {
      remaining: await totp.remainingRecoveryCodes(p.identityId, reachOf(p)),
    } satisfies RecoveryCodesRemainingView);
  });

  router.post(`${MFA_PATH}/recovery-codes`, auth, parseBody(), async (ctx: Context) => {
    const { code } = parseInput(mfaCodeSchema, bodyOf(ctx));
    const recoveryCodes = await totp.regenerateRecoveryCodes(principalOf(ctx).identityId, code);
    sendData(ctx, { recoveryCodes } satisfies RecoveryCodesView);
  });
}
