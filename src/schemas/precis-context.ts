/**
 * The contextual rules of RFC 5892 Appendix A, which PRECIS (RFC 8264 §9.8, §9.9) applies to
 * the joiners (CONTEXTJ) and to a few punctuation marks and digit sets (CONTEXTO). Each rule
 * looks at the code points around position `i` of `cps`.
 */

// Canonical_Combining_Class is not exposed to JavaScript, but normalization reorders marks by
// it: a mark sorts after U+3099 (class 8) and before U+05B0 (class 10) exactly when its class is
// 9, Virama. Node's own normalization data answers, so the rule follows its Unicode version.
const CLASS_8 = '\u3099';
const CLASS_10 = '\u05b0';
const reorders = (first: string, second: string) => {
  const s = `a${first}${second}`;
  return s.normalize('NFD') !== s;
};

export function isVirama(cp: number | undefined): boolean {
  if (cp === undefined) return false;
  const c = String.fromCodePoint(cp);
  return c.normalize('NFD') === c && reorders(c, CLASS_8) && reorders(CLASS_10, c);
}

/**
 * Joining_Type (Unicode ArabicShaping.txt) R and D of the Arabic, Arabic Supplement and N'Ko
 * letters; JavaScript has no property for it. Inclusive ranges. Letters of other joining scripts
 * (Syriac, Mongolian, …) are not listed, so a ZWNJ between them is refused: stricter, never looser.
 */
// prettier-ignore
const RIGHT: [number, number][] = [
  [0x0622, 0x0625], [0x0627, 0x0627], [0x0629, 0x0629], [0x062f, 0x0632], [0x0648, 0x0648],
  [0x0671, 0x0673], [0x0675, 0x0677], [0x0688, 0x0699], [0x06c0, 0x06c0], [0x06c3, 0x06cb],
  [0x06cd, 0x06cd], [0x06cf, 0x06cf], [0x06d2, 0x06d3], [0x06d5, 0x06d5], [0x06ee, 0x06ef],
  [0x0759, 0x075b], [0x076b, 0x076c], [0x0771, 0x0771], [0x0773, 0x0774], [0x0778, 0x0779],
];
// prettier-ignore
const DUAL: [number, number][] = [
  [0x0620, 0x0620], [0x0626, 0x0626], [0x0628, 0x0628], [0x062a, 0x062e], [0x0633, 0x063f],
  [0x0641, 0x0647], [0x0649, 0x064a], [0x066e, 0x066f], [0x0678, 0x0687], [0x069a, 0x06bf],
  [0x06c1, 0x06c2], [0x06cc, 0x06cc], [0x06ce, 0x06ce], [0x06d0, 0x06d1], [0x06fa, 0x06fc],
  [0x06ff, 0x06ff], [0x0750, 0x0758], [0x075c, 0x076a], [0x076d, 0x0770], [0x0772, 0x0772],
  [0x0775, 0x0777], [0x077a, 0x077f], [0x07ca, 0x07ea],
];

const within = (ranges: [number, number][], cp: number) => ranges.some(([lo, hi]) => cp >= lo && cp <= hi);
// Not listed and of category Mn, Me or Cf: Joining_Type T (transparent), per ArabicShaping.txt,
// which lists ZWNJ as non-joining and ZWJ as join-causing.
const TRANSPARENT = /^[\p{Mn}\p{Me}\p{Cf}]$/u;
const isTransparent = (cp: number) =>
  cp !== 0x200c &&
  cp !== 0x200d &&
  !within(DUAL, cp) &&
  !within(RIGHT, cp) &&
  TRANSPARENT.test(String.fromCodePoint(cp));

/** The nearest code point from `i` in direction `step` that is not transparent. */
function nearestJoining(cps: number[], i: number, step: 1 | -1): number | undefined {
  for (let j = i + step; j >= 0 && j < cps.length; j += step) {
    if (!isTransparent(cps[j]!)) return cps[j];
  }
  return undefined;
}

/** RFC 5892 A.1 (ZWNJ) and A.2 (ZWJ). */
export function joinerAllowed(cps: number[], i: number): boolean {
  if (isVirama(cps[i - 1])) return true;
  if (cps[i] !== 0x200c) return false;
  const before = nearestJoining(cps, i, -1);
  const after = nearestJoining(cps, i, 1);
  // Joining types L (none among the listed letters) or D before, R or D after.
  return (
    before !== undefined &&
    after !== undefined &&
    within(DUAL, before) &&
    (within(DUAL, after) || within(RIGHT, after))
  );
}

const GREEK = /^\p{Script=Greek}$/u;
const HEBREW = /^\p{Script=Hebrew}$/u;
const KANA_OR_HAN = /^[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]$/u;
const char = (cp: number | undefined) => (cp === undefined ? '' : String.fromCodePoint(cp));
const inRange = (cp: number, lo: number) => cp >= lo && cp <= lo + 9;

/** A value computed on first use and then kept. */
function once<T>(compute: () => T): () => T {
  let value: { v: T } | undefined;
  return () => (value ??= { v: compute() }).v;
}

/**
 * RFC 5892 A.3–A.9, the code points whose Exceptions value is CONTEXTO, for the code points
 * `cps` of one string: `allowed(i)` answers for position `i`. A.7–A.9 look at the whole string;
 * each of those properties is computed once for the string, not once per code point that asks,
 * so a name made of thousands of U+30FB or Arabic-Indic digits is checked in linear time.
 */
export function contextORules(cps: number[]): (i: number) => boolean {
  // One code point at a time: spreading a long string into String.fromCodePoint overflows the stack.
  const kanaOrHan = once(() => cps.some((c) => c !== 0x30fb && KANA_OR_HAN.test(String.fromCodePoint(c))));
  const arabicIndic = once(() => cps.some((c) => inRange(c, 0x0660)));
  const extendedArabicIndic = once(() => cps.some((c) => inRange(c, 0x06f0)));
  return (i) => {
    const cp = cps[i]!;
    if (cp === 0x00b7) return cps[i - 1] === 0x6c && cps[i + 1] === 0x6c;
    if (cp === 0x0375) return GREEK.test(char(cps[i + 1]));
    if (cp === 0x05f3 || cp === 0x05f4) return HEBREW.test(char(cps[i - 1]));
    if (cp === 0x30fb) return kanaOrHan();
    if (inRange(cp, 0x0660)) return !extendedArabicIndic();
    if (inRange(cp, 0x06f0)) return !arabicIndic();
    return false;
  };
}
