import type { Db } from '../db/create-database.js';
import type { Identity } from '../repositories/identities-repository.js';
import { roleAttributesRepository } from '../repositories/identities-repository.js';
import { authenticatorsRepository, type Authenticator } from '../repositories/authenticators-repository.js';
import { mfaTotpRepository } from '../repositories/mfa-totp-repository.js';
import { apiSessionsRepository } from '../repositories/api-sessions-repository.js';
import { enrollmentsRepository, type Enrollment } from '../repositories/enrollments-repository.js';
import type { EnrollmentTokens, OpenEnrollment } from './enrollment-tokens.js';
import { isDisabled } from './auth/identity-status.js';

/** Signs the enrollment JWT shown in identity details (the enrollment service provides it). */
export type EnrollmentJwtSigner = (enrollment: OpenEnrollment) => Promise<string>;

export interface IdentityViewDeps {
  signEnrollmentJwt: EnrollmentJwtSigner;
  /** Opens the sealed token: admins may fetch it again from the identity detail. */
  tokens: Pick<EnrollmentTokens, 'open'>;
  now?: () => Date;
}

function authenticatorsView(list: Authenticator[]) {
  const view: Record<string, unknown> = {};
  for (const a of list) {
    if (a.method === 'updb') view.updb = { id: a.id, username: a.username };
    if (a.method === 'cert') view.cert = { id: a.id, fingerprint: a.certFingerprint };
  }
  return view;
}

async function enrollmentView(
  list: Enrollment[],
  sign: EnrollmentJwtSigner,
  tokens: IdentityViewDeps['tokens'],
) {
  const view: Record<string, unknown> = {};
  for (const stored of list) {
    const e = tokens.open(stored);
    view[e.method] = {
      id: e.id,
      token: e.token,
      jwt: await sign(e),
      expiresAt: e.expiresAt.toISOString(),
      ...(e.username ? { username: e.username } : {}),
      ...(e.caId ? { caId: e.caId } : {}),
    };
  }
  return view;
}

/** The identity detail (authenticators, enrollments, MFA, session), for a page of identities at once. */
export function createIdentityView({ signEnrollmentJwt, tokens, now = () => new Date() }: IdentityViewDeps) {
  return async function viewIdentities(db: Db, identities: Identity[]) {
    const ids = identities.map((i) => i.id);
    const [roles, authenticators, enrollments, mfa, sessions] = await Promise.all([
      roleAttributesRepository.listFor(db, ids),
      authenticatorsRepository.listFor(db, ids),
      enrollmentsRepository.listFor(db, ids),
      mfaTotpRepository.verifiedAmong(db, ids),
      apiSessionsRepository.activeAmong(db, ids, now()),
    ]);
    return Promise.all(
      identities.map(async (i) => ({
        id: i.id,
        name: i.name,
        type: i.type,
        isAdmin: i.isAdmin,
        isDefaultAdmin: i.isDefaultAdmin,
        externalId: i.externalId,
        authPolicyId: i.authPolicyId,
        roleAttributes: roles.get(i.id) ?? [],
        tags: i.tags,
        disabled: isDisabled(i, now()),
        disabledUntil: i.disabledUntil?.toISOString() ?? null,
        isMfaEnabled: mfa.has(i.id),
        hasApiSession: sessions.has(i.id),
        authenticators: authenticatorsView(authenticators.filter((a) => a.identityId === i.id)),
        enrollment: await enrollmentView(
          enrollments.filter((e) => e.identityId === i.id),
          signEnrollmentJwt,
          tokens,
        ),
        createdAt: i.createdAt.toISOString(),
        updatedAt: i.updatedAt.toISOString(),
      })),
    );
  };
}

export type IdentityView = ReturnType<typeof createIdentityView>;
