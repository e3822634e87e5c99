import type { Knex } from 'knex';
import { constantTimeEqual, sha256Hex } from '../../crypto/random.js';
import type { SecretBox } from '../../crypto/secret-box.js';
import { inTransaction } from '../../db/transaction.js';
import { AppError, isAppError } from '../../errors/app-error.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import { mfaRecoveryCodesRepository } from '../../repositories/mfa-recovery-codes-repository.js';
import { mfaTotpRepository, type TotpConfig } from '../../repositories/mfa-totp-repository.js';
import { NO_AUDIT, reasonCode, type AuditTrail } from '../audit-trail.js';
import type { IdentityChangeFeed } from '../revocation-service.js';
import { provisioningUrl } from './provisioning-url.js';
import { createRecoveryCodeHasher, newRecoveryCodes, normalizeRecoveryCode } from './recovery-codes.js';
import { createSecondFactorAttempts } from './second-factor-attempts.js';
import { matchTotpStep, newTotpSecret } from './totp-codes.js';

export interface TotpServiceDeps {
  knex: Knex;
  box: SecretBox;
  /** `edge.totp.issuer`: the display name in the provisioning URL. */
  issuer: string;
  /** Publishes a verified configuration coming or going (the identity detail shows it). */
  changes?: IdentityChangeFeed;
  audit?: AuditTrail;
  now?: () => Date;
}

/** The error a wrong login code gets: OIDC says INVALID_TOTP_CODE, legacy sessions MFA_INVALID_TOKEN. */
export type InvalidCodeError = 'INVALID_TOTP_CODE' | 'MFA_INVALID_TOKEN';

export interface LoginCodeOptions {
  /** Recovery codes are accepted wherever a TOTP code is at login. Default true. */
  allowRecovery?: boolean;
  invalidCode?: InvalidCodeError;
}

export type CodeKind = 'totp' | 'recovery';

export interface EnrollmentStart {
  isVerified: false;
  provisioningUrl: string;
  recoveryCodes: string[];
}

export interface TotpDetail {
  isVerified: boolean;
  /** Only while unverified: the secret is shown until the authenticator app has proven it has it. */
  provisioningUrl?: string;
  createdAt: Date;
  verifiedAt: Date | null;
}

/**
 * Which unverified enrollment a caller reaches: the one its marker names (an OIDC login), or one
 * that API session started (legacy or bearer, whatever its MFA state). One started with neither
 * (before sessions were recorded) matches no session. Omitted: any (internal callers only). The
 * secret of an enrollment started elsewhere may be its owner's, or an attacker's who has only the
 * password (docs/security.md, "Second factors").
 */
export type EnrollmentReach = { marker: string } | { startedBySession: string };

function reaches(config: TotpConfig, reach: EnrollmentReach | undefined): boolean {
  if (reach === undefined) return true;
  if ('marker' in reach) return constantTimeEqual(sha256Hex(config.secretEnc), reach.marker);
  return config.startedBySession === reach.startedBySession;
}

const notFound = (message: string) => new AppError('NOT_FOUND', { message });
const withoutSpaces = (code: string) => code.replace(/\s/g, '');

/**
 * TOTP second factor: enrollment, login codes,
 * recovery codes. RFC 6238 SHA-1/6 digits/30 s/±1 step; each time step accepted once per
 * identity; the secret sealed with the master key; at most 5 failed codes per 15 minutes.
 */
export function createTotpService({
  knex,
  box,
  issuer,
  changes,
  audit = NO_AUDIT,
  now = () => new Date(),
}: TotpServiceDeps) {
  const hashCode = createRecoveryCodeHasher(knex, box);
  const limited = createSecondFactorAttempts({ knex, now });
  const invalid = (code: InvalidCodeError, detail: string) => new AppError(code, { detail });

  /** New codes and their hashes, computed before any transaction (PGlite has one connection). */
  async function freshRecoveryCodes(identityId: string) {
    const codes = newRecoveryCodes();
    return { codes, hashes: await Promise.all(codes.map((c) => hashCode(identityId, c))) };
  }

  async function checkVerifiedCode(config: TotpConfig, code: string, allowRecovery: boolean) {
    const secret = box.open(config.secretEnc);
    const step = await matchTotpStep(secret, withoutSpaces(code), now(), config.lastUsedStep);
    if (step !== undefined) {
      return (await mfaTotpRepository.consumeStep(knex, config.identityId, step))
        ? ('totp' as const)
        : undefined;
    }
    const recovery = allowRecovery ? normalizeRecoveryCode(code) : undefined;
    if (recovery === undefined) return undefined;
    const hash = await hashCode(config.identityId, recovery);
    const used = await mfaRecoveryCodesRepository.consume(knex, config.identityId, hash, now());
    return used ? ('recovery' as const) : undefined;
  }

  /**
   * One `auth.second-factor` event per code checked: a success is held for the write the request
   * makes with it (a login's session, the removal of the configuration; audit-trail.ts `hold`),
   * unless `check` stored it itself (`stored`); a failure or a refusal by the limit is counted in
   * its row of the minute.
   */
  async function audited<T>(
    identityId: string,
    extra: object,
    check: () => Promise<T>,
    method: (r: T) => string | undefined,
  ) {
    try {
      const result = await check();
      const name = method(result);
      if (name !== undefined) {
        await audit.hold({
          event: 'auth.second-factor',
          method: name,
          outcome: 'success',
          identityId,
          ...extra,
        });
      }
      return result;
    } catch (err) {
      if (isAppError(err) && err.code !== 'NOT_FOUND') {
        await audit.storeAttempt({
          event: 'auth.second-factor',
          method: 'totp',
          outcome: err.code === 'RATE_LIMITED' ? 'lockout' : 'failure',
          reason: reasonCode(err.detail, err.code),
          identityId,
          ...extra,
        });
      }
      throw err;
    }
  }

  function verifyLoginCode(
    identityId: string,
    code: string,
    options: LoginCodeOptions = {},
  ): Promise<CodeKind> {
    return audited(
      identityId,
      {},
      () => checkLoginCode(identityId, code, options),
      (kind) => (kind === 'recovery' ? 'recovery-code' : 'totp'),
    );
  }

  async function checkLoginCode(
    identityId: string,
    code: string,
    { allowRecovery = true, invalidCode = 'MFA_INVALID_TOKEN' }: LoginCodeOptions,
  ): Promise<CodeKind> {
    // An unverified enrollment's secret never satisfies a login: it may never have reached an app.
    const config = await mfaTotpRepository.find(knex, identityId);
    if (!config?.isVerified) throw invalid(invalidCode, 'no verified TOTP configuration');
    const kind = await limited(identityId, () => checkVerifiedCode(config, code, allowRecovery));
    if (!kind) throw invalid(invalidCode, 'wrong, replayed or used code');
    return kind;
  }

  /** Starts an enrollment for an API session, which is recorded as the one that started it. */
  async function startEnrollment(
    identityId: string,
    identityName: string,
    sessionId?: string,
  ): Promise<EnrollmentStart> {
    return (await startMarkedEnrollment(identityId, identityName, sessionId)).start;
  }

  /**
   * Starts an enrollment and names it by a marker (a hash of its sealed secret, which is fresh per
   * enrollment), so that a login can later reach the enrollment it started and no other.
   */
  async function startMarkedEnrollment(
    identityId: string,
    identityName: string,
    sessionId?: string,
  ): Promise<{ start: EnrollmentStart; marker: string }> {
    const secret = newTotpSecret();
    const sealed = box.seal(secret);
    const { codes, hashes } = await freshRecoveryCodes(identityId);
    await inTransaction(knex, async (trx) => {
      const created = await mfaTotpRepository.insertIfAbsent(trx, identityId, sealed, sessionId);
      if (!created) throw new AppError('MFA_EXISTS');
      await mfaRecoveryCodesRepository.replace(trx, identityId, hashes);
    });
    const start = {
      isVerified: false as const,
      provisioningUrl: provisioningUrl(issuer, identityName, secret),
      recoveryCodes: codes,
    };
    return { start, marker: sha256Hex(sealed) };
  }

  /** The unverified enrollment, if the caller reaches it. */
  async function enrollmentInProgress(
    identityId: string,
    reach?: EnrollmentReach,
  ): Promise<TotpConfig | undefined> {
    const config = await mfaTotpRepository.find(knex, identityId);
    if (!config || config.isVerified) return undefined;
    return reaches(config, reach) ? config : undefined;
  }

  /**
   * A TOTP code (never a recovery code: it would prove nothing about the app) verifies it. The
   * failure limit applies here too: an enrollment may have been started by
   * someone else than the one guessing against it, and a verified one completes a login.
   */
  function verifyEnrollment(identityId: string, code: string, reach?: EnrollmentReach): Promise<void> {
    // A verified code stores its success itself, with the configuration it verifies.
    return audited(
      identityId,
      { enrollment: true },
      () => checkEnrollment(identityId, code, reach),
      () => undefined,
    );
  }

  async function checkEnrollment(identityId: string, code: string, reach?: EnrollmentReach): Promise<void> {
    const config = await enrollmentInProgress(identityId, reach);
    if (!config) throw notFound('no TOTP enrollment is in progress');
    const step = await limited(identityId, () =>
      matchTotpStep(box.open(config.secretEnc), withoutSpaces(code), now(), config.lastUsedStep),
    );
    if (step === undefined) throw invalid('MFA_INVALID_TOKEN', 'wrong enrollment code');
    await inTransaction(knex, async (trx, afterCommit) => {
      const verified = await mfaTotpRepository.markVerified(trx, identityId, step, now(), config.secretEnc);
      if (!verified) throw invalid('MFA_INVALID_TOKEN', 'enrollment changed or code replayed');
      await changes?.identityChanged(trx, afterCommit, identityId);
      await audit.store(trx, afterCommit, {
        event: 'auth.second-factor',
        method: 'totp',
        outcome: 'success',
        identityId,
        enrollment: true,
      });
    });
  }

  /** Drops an unverified enrollment (one the caller reaches) and its codes; 404 when none is in progress. */
  async function abandonEnrollment(identityId: string, reach?: EnrollmentReach): Promise<void> {
    const secretEnc =
      reach === undefined ? undefined : (await enrollmentInProgress(identityId, reach))?.secretEnc;
    if (reach !== undefined && !secretEnc) throw notFound('no TOTP enrollment is in progress');
    await inTransaction(knex, async (trx) => {
      if (!(await mfaTotpRepository.deleteUnverified(trx, identityId, secretEnc))) {
        throw notFound('no TOTP enrollment is in progress');
      }
      await mfaRecoveryCodesRepository.deleteAll(trx, identityId);
    });
  }

  /** Removes the configuration: an unverified one freely, a verified one only with a valid code. */
  async function remove(identityId: string, code?: string): Promise<void> {
    const config = await mfaTotpRepository.find(knex, identityId);
    if (!config) throw notFound('no TOTP configuration');
    if (!config.isVerified) return abandonEnrollment(identityId);
    if (!code) throw invalid('MFA_INVALID_TOKEN', 'a code is required to remove a verified configuration');
    await verifyLoginCode(identityId, code);
    await inTransaction(knex, async (trx, afterCommit) => {
      await mfaTotpRepository.delete(trx, identityId);
      await mfaRecoveryCodesRepository.deleteAll(trx, identityId);
      await changes?.identityChanged(trx, afterCommit, identityId);
      // The code's success event (held by `verifyLoginCode`) joins the change it allowed.
      await audit.storeHeld(trx, afterCommit);
      await audit.store(trx, afterCommit, { event: 'mfa.removed', identityId });
    });
  }

  /** Replaces every recovery code after a valid code; the new ones are returned once. */
  async function regenerateRecoveryCodes(identityId: string, code: string): Promise<string[]> {
    const config = await mfaTotpRepository.find(knex, identityId);
    if (!config?.isVerified) throw notFound('no verified TOTP configuration');
    await verifyLoginCode(identityId, code);
    const { codes, hashes } = await freshRecoveryCodes(identityId);
    await inTransaction(knex, async (trx, afterCommit) => {
      if (!(await mfaTotpRepository.find(trx, identityId))) throw notFound('no verified TOTP configuration');
      await mfaRecoveryCodesRepository.replace(trx, identityId, hashes);
      // The code's success event (held by `verifyLoginCode`) joins the change it allowed.
      await audit.storeHeld(trx, afterCommit);
    });
    return codes;
  }

  /** Unused recovery codes of a verified configuration, or of an enrollment the caller reaches. */
  async function remainingRecoveryCodes(identityId: string, reach?: EnrollmentReach): Promise<number> {
    const config = await mfaTotpRepository.find(knex, identityId);
    // Even a count would tell a session that someone else's enrollment is in progress.
    if (!config || (!config.isVerified && !reaches(config, reach))) throw notFound('no TOTP configuration');
    return mfaRecoveryCodesRepository.countUnused(knex, identityId);
  }

  /**
   * The policy asks for TOTP, or the identity has a verified configuration (it opted in); with the
   * identity's `verified` status beside it, from one read.
   */
  async function requirement(
    identityId: string,
    policy: { secondary: { requireTotp: boolean } },
  ): Promise<{ required: boolean; verified: boolean }> {
    const { verified } = await status(identityId);
    return { required: policy.secondary.requireTotp || verified, verified };
  }

  async function status(identityId: string): Promise<{ enrolled: boolean; verified: boolean }> {
    const config = await mfaTotpRepository.find(knex, identityId);
    return { enrolled: config !== undefined, verified: config?.isVerified ?? false };
  }

  async function urlWhileUnverified(config: TotpConfig): Promise<string | undefined> {
    if (config.isVerified) return undefined;
    const identity = await identitiesRepository.findById(knex, config.identityId);
    return identity && provisioningUrl(issuer, identity.name, box.open(config.secretEnc));
  }

  /** The provisioning URL while an enrollment the caller reaches is unverified (QR code), else undefined. */
  async function provisioningUrlFor(
    identityId: string,
    reach?: EnrollmentReach,
  ): Promise<string | undefined> {
    const config = await enrollmentInProgress(identityId, reach);
    return config && urlWhileUnverified(config);
  }

  /** The configuration: a verified one, or an enrollment in progress that the caller reaches. */
  async function detail(identityId: string, reach?: EnrollmentReach): Promise<TotpDetail | undefined> {
    const config = await mfaTotpRepository.find(knex, identityId);
    if (!config || (!config.isVerified && !reaches(config, reach))) return undefined;
    const url = await urlWhileUnverified(config);
    return {
      isVerified: config.isVerified,
      ...(url ? { provisioningUrl: url } : {}),
      createdAt: config.createdAt,
      verifiedAt: config.verifiedAt,
    };
  }

  return {
    startEnrollment,
    startMarkedEnrollment,
    verifyEnrollment,
    abandonEnrollment,
    verifyLoginCode,
    status,
    requirement,
    remove,
    regenerateRecoveryCodes,
    remainingRecoveryCodes,
    provisioningUrlFor,
    detail,
  };
}

export type TotpService = ReturnType<typeof createTotpService>;
