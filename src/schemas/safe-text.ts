const LONE_SURROGATE = /\p{Cs}/u;

/**
 * C0 control characters other than TAB, LF and CR, and UTF-16 surrogates without their pair. NUL
 * cannot be stored in PostgreSQL text or jsonb at all, jsonb refuses a lone surrogate, and none
 * of them belongs in a name, id, code, token or password that a client could type; TAB, LF and
 * CR do occur in legitimate text (PEM, descriptions).
 */
export function isForbidden(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return true;
  }
  return LONE_SURROGATE.test(text);
}

export const CONTROL_REASON =
  'must not contain control characters other than tab, line feed and carriage return, nor unpaired surrogates';
