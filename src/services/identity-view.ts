import type { Db } from '../db/create-database.js';
import type { Identity } from '../repositories/identities-repository.js';
import { roleAttributesRepository } from '../repositories/identities-repository.js';
import { authenticatorsRepository, type Authenticator } from '../repositories/authenticators-repository.js';
import { mfaTotpRepository } from '../repositories/mfa-totp-repository.js';
import { passkeysRepository } from '../repositories/passkeys-repository.js';
import { apiSessionsRepository } from '../repositories/api-sessions-repository.js';
import { enrollmentsRepository, type Enrollment } from '../repositories/enrollments-repository.js';
import type { EnrollmentTokens, OpenEnrollment } from './enrollment-tokens.js';
import type {
  IdentityAuthenticators,
  IdentityDetail,
  IdentityEnrollments,
} from '../schemas/identity-views.js';
import { isDisabled } from './auth/identity-status.js';
import { IDENTITY_PERMISSIONS, type IdentityPermission } from '../schemas/identity-schemas.js';

/** A name this version knows (a newer one may have stored others; they are not shown). */
const isIdentityPermission = (p: string): p is IdentityPermission =>
  (IDENTITY_PERMISSIONS as readonly string[]).includes(p);

/** Signs the enrollment JWT shown in identity details (the enrollment service provides it). */
export type EnrollmentJwtSigner = (enrollment: OpenEnrollment) => Promise<string>;

export interface IdentityViewDeps {
  signEnrollmentJwt: EnrollmentJwtSigner;
  /** Opens the sealed token: admins may fetch it again from the identity detail. */
  tokens: Pick<EnrollmentTokens, 'open'>;
  now?: () => Date;
}

function authenticatorsView(list: Authenticator[]): IdentityAuthenticators {
  const view: IdentityAuthenticators = {};
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
): Promise<IdentityEnrollments> {
  const view: IdentityEnrollments = {};
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

/**
 * What the detail of one identity is made of, read from the database. Everything that changes with
 * the clock alone (disabled until, live sessions) is evaluated when it is shown, so these facts can be
 * kept until the identity, its authenticators, enrollments or TOTP change (each such write publishes an
 * identity change, services/revocation-service.ts).
 */
export interface IdentityFacts {
  identity: Identity;
  roleAttributes: string[];
  authenticators: Authenticator[];
  enrollments: Enrollment[];
  isMfaEnabled: boolean;
  /** How many passkeys the identity has registered. */
  passkeyCount: number;
  /** The latest expiry among the identity's API sessions at reading time (epoch ms; 0: none). */
  sessionsUntil: number;
  /** The enrollment part, signed once when first shown. */
  enrollmentView?: Promise<IdentityEnrollments>;
}

/** The identity detail (authenticators, enrollments, MFA, session), for a page of identities at once. */
export function createIdentityView({ signEnrollmentJwt, tokens, now = () => new Date() }: IdentityViewDeps) {
  async function factsOf(db: Db, identities: Identity[]): Promise<IdentityFacts[]> {
    const ids = identities.map((i) => i.id);
    const [roles, authenticators, enrollments, mfa, passkeys, sessions] = await Promise.all([
      roleAttributesRepository.listFor(db, ids),
      authenticatorsRepository.listFor(db, ids),
      enrollmentsRepository.listFor(db, ids),
      mfaTotpRepository.verifiedAmong(db, ids),
      passkeysRepository.countAmong(db, ids),
      apiSessionsRepository.activeUntilAmong(db, ids, now()),
    ]);
    return identities.map((identity) => ({
      identity,
      roleAttributes: roles.get(identity.id) ?? [],
      authenticators: authenticators.filter((a) => a.identityId === identity.id),
      enrollments: enrollments.filter((e) => e.identityId === identity.id),
      isMfaEnabled: mfa.has(identity.id),
      passkeyCount: passkeys.get(identity.id) ?? 0,
      sessionsUntil: sessions.get(identity.id)?.getTime() ?? 0,
    }));
  }

  async function render(facts: IdentityFacts): Promise<IdentityDetail> {
    const i = facts.identity;
    facts.enrollmentView ??= enrollmentView(facts.enrollments, signEnrollmentJwt, tokens);
    const enrollment = await facts.enrollmentView.catch((err: unknown) => {
      facts.enrollmentView = undefined;
      throw err;
    });
    return {
      id: i.id,
      name: i.name,
      type: i.type,
      isAdmin: i.isAdmin,
      isDefaultAdmin: i.isDefaultAdmin,
      externalId: i.externalId,
      authPolicyId: i.authPolicyId,
      roleAttributes: facts.roleAttributes,
      tags: i.tags,
      permissions: i.permissions.filter(isIdentityPermission),
      disabled: isDisabled(i, now()),
      disabledUntil: i.disabledUntil?.toISOString() ?? null,
      isMfaEnabled: facts.isMfaEnabled,
      passkeyCount: facts.passkeyCount,
      hasApiSession: facts.sessionsUntil > now().getTime(),
      authenticators: authenticatorsView(facts.authenticators),
      enrollment,
      createdAt: i.createdAt.toISOString(),
      updatedAt: i.updatedAt.toISOString(),
    };
  }

  async function viewIdentities(db: Db, identities: Identity[]) {
    return Promise.all((await factsOf(db, identities)).map(render));
  }

  return Object.assign(viewIdentities, { factsOf, render });
}

export type IdentityView = ReturnType<typeof createIdentityView>;
export type { IdentityDetail };
