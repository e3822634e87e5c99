import { contextORules, joinerAllowed } from './precis-context.js';

/**
 * The PRECIS string classes of RFC 8264: IdentifierClass (§4.2) for usernames, FreeformClass
 * (§4.3) for names. Each code point's derived property is computed as in §8 from the Unicode
 * properties Node's regular expressions and normalization expose (docs/adr/0012-precis-names.md).
 * No case mapping, width mapping or directionality rule: usernames stay case-sensitive, and a
 * string that is not NFC is refused rather than rewritten.
 */
export type PrecisClass = 'identifier' | 'freeform';

type Derived = 'PVALID' | 'FREE_PVAL' | 'CONTEXTJ' | 'CONTEXTO' | 'DISALLOWED' | 'UNASSIGNED';

/** RFC 5892 §2.6 (Exceptions), which RFC 8264 §9.6 applies first. */
const EXCEPTIONS = new Map<number, Derived>([
  ...[0x00df, 0x03c2, 0x06fd, 0x06fe, 0x0f0b, 0x3007].map((cp) => [cp, 'PVALID'] as const),
  ...[0x00b7, 0x0375, 0x05f3, 0x05f4, 0x30fb].map((cp) => [cp, 'CONTEXTO'] as const),
  ...Array.from({ length: 10 }, (_, d) => [0x0660 + d, 'CONTEXTO'] as const),
  ...Array.from({ length: 10 }, (_, d) => [0x06f0 + d, 'CONTEXTO'] as const),
  ...[0x0640, 0x07fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b].map(
    (cp) => [cp, 'DISALLOWED'] as const,
  ),
]);

const UNASSIGNED = /^\p{Cn}$/u;
// §9.10 PrecisIgnorableProperties: Default_Ignorable_Code_Point or Noncharacter_Code_Point.
const IGNORABLE = /^[\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}]$/u;
const CONTROL = /^\p{Cc}$/u;
// §9.8 OldHangulJamo: Hangul_Syllable_Type L, V or T.
const OLD_HANGUL_JAMO = /^[\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]$/u;
// §9.11 LetterDigits.
const LETTER_DIGIT = /^[\p{Ll}\p{Lu}\p{Lo}\p{Nd}\p{Lm}\p{Mn}\p{Mc}]$/u;
// §9.12–9.15: OtherLetterDigits, Spaces, Symbols, Punctuation.
const FREEFORM_ONLY = /^[\p{Lt}\p{Nl}\p{No}\p{Me}\p{Zs}\p{Sm}\p{Sc}\p{Sk}\p{So}\p{P}]$/u;

/** The derived property of one code point, in the order of RFC 8264 §8. */
function derive(cp: number): Derived {
  const exception = EXCEPTIONS.get(cp);
  if (exception) return exception;
  const c = String.fromCodePoint(cp);
  if (UNASSIGNED.test(c) && !IGNORABLE.test(c)) return 'UNASSIGNED';
  if (cp >= 0x21 && cp <= 0x7e) return 'PVALID';
  if (cp === 0x200c || cp === 0x200d) return 'CONTEXTJ';
  if (OLD_HANGUL_JAMO.test(c) || IGNORABLE.test(c) || CONTROL.test(c)) return 'DISALLOWED';
  if (c.normalize('NFKC') !== c) return 'FREE_PVAL';
  if (LETTER_DIGIT.test(c)) return 'PVALID';
  if (FREEFORM_ONLY.test(c)) return 'FREE_PVAL';
  return 'DISALLOWED';
}

/** `U+200B`: how a refused code point is named in an answer, never the raw character. */
export const codePointName = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;

function allowed(cps: number[], i: number, cls: PrecisClass, contextO: (i: number) => boolean): boolean {
  switch (derive(cps[i]!)) {
    case 'PVALID':
      return true;
    case 'FREE_PVAL':
      return cls === 'freeform';
    case 'CONTEXTJ':
      return joinerAllowed(cps, i);
    case 'CONTEXTO':
      return contextO(i);
    default:
      return false;
  }
}

/** Why `text` is not a string of the class, or undefined when it is. */
export function precisProblem(text: string, cls: PrecisClass): string | undefined {
  // Iterating a string yields code points; a lone surrogate comes out alone and is DISALLOWED.
  const cps = Array.from(text, (c) => c.codePointAt(0)!);
  const contextO = contextORules(cps);
  for (let i = 0; i < cps.length; i++) {
    if (!allowed(cps, i, cls, contextO)) {
      const what = cls === 'identifier' ? 'IdentifierClass' : 'FreeformClass';
      return `must not contain ${codePointName(cps[i]!)} here (PRECIS ${what}, RFC 8264)`;
    }
  }
  if (text.normalize('NFC') !== text) return 'must be in Unicode Normalization Form C (NFC)';
  return undefined;
}
