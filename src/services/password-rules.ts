import type { AuthPolicy } from '../repositories/auth-policies-repository.js';

export type PasswordRules = Pick<
  AuthPolicy['primary']['updb'],
  'minPasswordLength' | 'requireSpecialChar' | 'requireNumberChar' | 'requireMixedCase'
>;

/**
 * The first password rule of a policy that `password` breaks, or undefined. The
 * rules are enforced (OpenZiti stores them without enforcing them). Length counts
 * code points, so a password of emoji is not measured in UTF-16 halves.
 */
export function passwordRuleViolation(rules: PasswordRules, password: string): string | undefined {
  if ([...password].length < rules.minPasswordLength) {
    return `must be at least ${rules.minPasswordLength} characters long`;
  }
  if (rules.requireNumberChar && !/\p{Nd}/u.test(password)) return 'must contain a digit';
  if (rules.requireSpecialChar && !/[^\p{L}\p{Nd}]/u.test(password)) {
    return 'must contain a character that is neither a letter nor a digit';
  }
  if (rules.requireMixedCase && !(/\p{Lu}/u.test(password) && /\p{Ll}/u.test(password))) {
    return 'must contain both upper-case and lower-case letters';
  }
  return undefined;
}
