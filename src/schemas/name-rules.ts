import { validationError } from '../errors/app-error.js';
import { precisProblem } from './precis.js';

/**
 * Spaces (category Zs) around a name are dropped. Not String.prototype.trim, which also drops
 * U+FEFF: an invisible character must be refused, not quietly removed from one end only.
 */
export const trimSpaces = (s: string) => s.replace(/^\p{Zs}+|\p{Zs}+$/gu, '');

/**
 * Names (identities, auth policies, signers, CAs) are display text: PRECIS FreeformClass. The
 * rule is checked where the stored value is known, so that a row written under the older rule
 * stays writable: a PUT or PATCH that repeats the stored name unchanged is not checked again.
 */
export function checkName(field: string, next: string | undefined, stored?: string): void {
  if (next === undefined || next === stored) return;
  const problem = precisProblem(next, 'freeform');
  if (problem) throw validationError(field, problem);
}

/** Usernames are typed at every password login: PRECIS IdentifierClass, case kept. */
export const usernameProblem = (text: string) => precisProblem(text, 'identifier');
