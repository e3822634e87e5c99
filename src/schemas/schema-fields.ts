import { z } from 'zod';
import { booleanField } from './identity-schemas.js';
import { trimSpaces } from './name-rules.js';
import { line, text } from './safe-text.js';

/**
 * Field shapes shared by the policy, signer and CA bodies. Bodies may be form-encoded,
 * so numbers also come as the digit strings a form carries.
 */
export { booleanField, line, text };

/** Single-line: names, issuers, claim names and list items are shown on one line. */
export const nonEmpty = (max: number) =>
  line(max)
    .transform(trimSpaces)
    .refine((s) => s.length > 0, 'must not be empty');

export const idRef = line(255).min(1, 'must not be empty');

/** Integers within bounds: PostgreSQL `integer` columns must never see a value that overflows. */
export const boundedInt = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^-?\d{1,10}$/.test(v) ? Number(v) : v),
    z.number().int().min(min).max(max),
  );

/** Optional text where blank means none (a blank externalAuthUrl is null, as in OpenZiti). */
export const optionalText = (max: number) =>
  z
    .union([text(max), z.null()])
    .optional()
    .transform((s) => (s === undefined ? undefined : s === null || s.trim() === '' ? null : s.trim()));

/** An absolute http(s) URL or none. */
export const optionalUrl = z
  .union([text(2048), z.null()])
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return undefined;
    if (s === null || s.trim() === '') return null;
    if (!URL.canParse(s.trim()) || !/^https?:$/.test(new URL(s.trim()).protocol)) {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute http or https URL' });
      return z.NEVER;
    }
    return s.trim();
  });

export const stringList = (maxItems: number) =>
  z
    .union([z.array(nonEmpty(255)).max(maxItems), z.null()])
    .optional()
    .transform((list) => (list === undefined ? undefined : [...new Set(list ?? [])]));
