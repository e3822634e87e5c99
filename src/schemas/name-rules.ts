import { validationError } from '../errors/app-error.js';
import { spacesProblem } from './nickname-spaces.js';
import { precisProblem } from './precis.js';
import { mixedScriptProblem } from './single-script.js';
import { strayMarkProblem } from './stray-marks.js';

const SPACE = /^\p{Zs}$/u;

/**
 * Spaces (category Zs) around a name are dropped. Not String.prototype.trim, which also drops
 * U+FEFF: an invisible character must be refused, not quietly removed from one end only.
 */
export function trimSpaces(s: string): string {
  // Index loops, not /\p{Zs}+$/: a regular expression retries that from every space of a long
  // inner run, in time quadratic in the run. Every Zs character is a single UTF-16 unit.
  let start = 0;
  let end = s.length;
  while (start < end && SPACE.test(s[start]!)) start++;
  while (end > start && SPACE.test(s[end - 1]!)) end--;
  return s.slice(start, end);
}

/**
 * Why `text` is not a name: PRECIS FreeformClass, spaces as the Nickname profile would map them
 * (nickname-spaces.ts), no mark that combines with nothing (stray-marks.ts). Names are display text shown beside their ids, so letters of any
 * script, and a mix of scripts, stay allowed (docs/adr/0012-precis-names.md).
 */
export const nameProblem = (text: string) =>
  precisProblem(text, 'freeform') ?? spacesProblem(text) ?? strayMarkProblem(text);

/**
 * Names (identities, auth policies, signers, CAs): the rule is checked where the stored value is
 * known, so that a row written under an older rule stays writable: a PUT or PATCH that repeats
 * the stored name unchanged is not checked again.
 */
export function checkName(field: string, next: string | undefined, stored?: string): void {
  if (next === undefined || next === stored) return;
  const problem = nameProblem(next);
  if (problem) throw validationError(field, problem);
}

/**
 * Usernames are typed at every password login: PRECIS IdentifierClass, case kept, one script
 * among Latin, Cyrillic and Greek (single-script.ts), no stray mark or joiner (stray-marks.ts). A username is
 * fixed when its enrollment is created and never resent, so no stored value needs passing again.
 */
export const usernameProblem = (text: string) =>
  precisProblem(text, 'identifier') ?? strayMarkProblem(text) ?? mixedScriptProblem(text);
