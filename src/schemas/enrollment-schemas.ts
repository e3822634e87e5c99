import { z } from 'zod';
import { username } from './identity-schemas.js';
import { line, text } from './safe-text.js';
import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';

/** Request bodies of `/enrollments` (management) and `/enroll/*` (client). */

const dateTime = z.iso
  .datetime({ offset: true, message: 'must be a date-time such as "2030-01-31T12:00:00Z"' })
  .transform((s) => new Date(s));

const id = line(255).min(1, 'must not be empty');

export const enrollmentCreateSchema = z
  .strictObject({
    method: z.enum(['ott', 'ottca', 'updb'], { message: 'must be one of ott, ottca, updb' }),
    identityId: id,
    expiresAt: dateTime.optional(),
    caId: id.optional(),
    username: username.optional(),
  })
  .superRefine((e, ctx) => {
    const need = (field: 'caId' | 'username', wanted: boolean) => {
      if (wanted && e[field] === undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `is required for method ${e.method}` });
      if (!wanted && e[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `is not allowed for method ${e.method}` });
    };
    need('caId', e.method === 'ottca');
    need('username', e.method === 'updb');
  });

export const enrollmentRefreshSchema = z.strictObject({ expiresAt: dateTime });

// Our tokens are 43 characters; the bound only keeps junk away from the database.
const token = text(256).min(1, 'must not be empty');

export const enrollTokenSchema = z.object({ token });

export const enrollUpdbSchema = z.object({
  token,
  // Argon2id work grows with the input: an upper bound keeps one request cheap.
  password: text(1024).min(1, 'must not be empty'),
});

export const enrollOttSchema = z.object({
  token,
  clientCsr: text(65536).min(1, 'must not be empty'),
});

/** `POST /enroll?method=ca`: an optional name for the `[requestedName]` placeholder. */
export const enrollCaSchema = z.object({ name: line(255).optional() });

export type EnrollmentCreateInput = z.output<typeof enrollmentCreateSchema>;

/** API field → column, for list filters and sorting. */
export const enrollmentListFields = {
  id: { column: 'id', type: 'string' },
  identityId: { column: 'identity_id', type: 'string' },
  method: { column: 'method', type: 'string' },
  expiresAt: { column: 'expires_at', type: 'datetime' },
  createdAt: { column: 'created_at', type: 'datetime' },
} satisfies ListFields;

export const parseEnrollmentList = listQueryParser(enrollmentListFields, 'createdAt asc');
