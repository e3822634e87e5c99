/**
 * The scripts whose letters pass for one another (Latin `a`, Cyrillic `а`, Greek `ο`). A username
 * mixing them is refused, as UTS #39 §5.1 ("single script") would; a username all in one of
 * them, or in any other script, is accepted. Script_Extensions, so a letter shared by two of
 * them (none today) would not count as a mix.
 */
const CONFUSABLE_SCRIPTS = [
  ['Latin', /\p{Script_Extensions=Latin}/u],
  ['Cyrillic', /\p{Script_Extensions=Cyrillic}/u],
  ['Greek', /\p{Script_Extensions=Greek}/u],
] as const;
const LETTER = /\p{L}/u;

/** Why `text` mixes Latin with Cyrillic or Greek letters, or undefined. */
export function mixedScriptProblem(text: string): string | undefined {
  let common: string[] | undefined;
  for (const c of [...text].filter((ch) => LETTER.test(ch))) {
    const scripts: string[] = CONFUSABLE_SCRIPTS.filter(([, re]) => re.test(c)).map(([name]) => name);
    if (scripts.length === 0) continue;
    const next: string[] = common ? common.filter((s) => scripts.includes(s)) : scripts;
    if (next.length === 0) return `must not mix ${common!.join('/')} and ${scripts.join('/')} letters`;
    common = next;
  }
  return undefined;
}
