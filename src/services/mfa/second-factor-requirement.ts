import type { AuthPolicy } from '../../repositories/auth-policies-repository.js';
import type { TotpService } from './totp-service.js';

/** The policy type the login code reads (routes take it from here, never from a repository). */
export type { AuthPolicy };

/**
 * What a login owes as its MFA step, whatever the API (the legacy session or the OIDC login) that
 * turns it into its own auth query:
 *
 *   passkey   the policy requires a passkey (`secondary.requirePasskey`; an extension beyond the
 *             specification). `registered` false: the login registers the first one mid-flow;
 *             `totpFirst`: the identity has verified TOTP, whose code must be paid before that
 *             registration (a password alone never binds a factor) and does not pay the passkey.
 *   totp      the policy requires TOTP or the identity has verified TOTP; `hasPasskey`: a passkey
 *             of the identity pays it as well.
 *   none      no MFA step.
 */
export type SecondFactorRequirement =
  | { kind: 'passkey'; registered: boolean; totpFirst: boolean }
  | { kind: 'totp'; verified: boolean; hasPasskey: boolean }
  | { kind: 'none' };

export interface SecondFactorRequirementDeps {
  totp: Pick<TotpService, 'requirement'>;
  /** How many passkeys an identity has registered. */
  passkeys: { count(identityId: string): Promise<number> };
}

/** The one rule of what a login owes as its MFA step (see `SecondFactorRequirement`). */
export async function secondFactorRequirement(
  deps: SecondFactorRequirementDeps,
  identityId: string,
  policy: Pick<AuthPolicy, 'secondary'>,
): Promise<SecondFactorRequirement> {
  const hasPasskey = async () => (await deps.passkeys.count(identityId)) > 0;
  if (policy.secondary.requirePasskey) {
    if (await hasPasskey()) return { kind: 'passkey', registered: true, totpFirst: false };
    const { verified } = await deps.totp.requirement(identityId, policy);
    return { kind: 'passkey', registered: false, totpFirst: verified };
  }
  const totp = await deps.totp.requirement(identityId, policy);
  if (!totp.required) return { kind: 'none' };
  return { kind: 'totp', verified: totp.verified, hasPasskey: await hasPasskey() };
}
