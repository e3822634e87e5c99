/*
 * What `GET /audit-events` answers, as the API document describes it: stored audit events and the
 * cursor paging of the trail. The services' view of an event is this schema's type, so the two
 * cannot drift apart.
 */
import { z } from 'zod';
import { count, instant } from './view-fields.js';

export const auditEventViewSchema = z.object({
  id: z
    .string()
    .describe('The row id; with `attempts` above 1 the same row may come again with a higher count.'),
  event: z.string().describe('The event name (docs/operations.md, "Audit events").'),
  occurredAt: instant,
  outcome: z.string().optional(),
  identityId: z.string().optional(),
  actorId: z.string().optional(),
  sourceAddress: z.string().optional(),
  requestId: z.string().optional(),
  attempts: count.describe(
    'Attempts aggregated into this row (failed logins and second factors per minute); 1 otherwise.',
  ),
  lastAt: instant.optional().describe('The latest attempt of an aggregated row.'),
  details: z.record(z.string(), z.unknown()).describe('Every other field of the event; never a secret.'),
});

const cursor = z.string().describe('Opaque; pass it back unchanged.');

export const cursorPaginationSchema = z.object({
  limit: count,
  nextCursor: cursor
    .nullable()
    .describe(
      'Newest first: `cursor=` this for the next (older) page; null when this page was the last. ' +
        'Following (`after`): `after=` this for the next request; never null.',
    ),
  headCursor: cursor.describe(
    'The head of the trail as this read saw it: `after=` this returns exactly the events this read could not see yet.',
  ),
});

export const cursorListMetaSchema = z.object({ pagination: cursorPaginationSchema });

export type CursorPagination = z.infer<typeof cursorPaginationSchema>;
export type AuditEventView = z.infer<typeof auditEventViewSchema>;
