import { DEFAULT_LIMIT, MAX_LIMIT } from '../schemas/list-query.js';
import { admin } from './crud-routes.js';
import { obj, ref, str } from './json-schema.js';
import type { RouteDoc } from './operations.js';

const DESCRIPTION =
  'The stored audit trail (docs/operations.md, "Querying the audit trail"), never a secret. Newest ' +
  'first, in commit order: only events whose transaction ended before the oldest one still running, ' +
  'so a page or a cursor never passes an event that commits later. Pages by cursor: `limit` and ' +
  '`cursor` (`meta.pagination.nextCursor`, null after the last page); there is no `offset`, `sort` ' +
  'or total count (400 for `offset` and `sort`). `after=<cursor>` follows the trail instead: the ' +
  'events after that position, oldest first; pass `nextCursor` back each time (it moves to the head ' +
  'when nothing is left). `meta.pagination.headCursor` of any answer, or `after=now`, starts ' +
  'following at the head with no gap. An aggregated failure (`attempts` above 1) comes again, with ' +
  'its new count, when an attempt is added to it.';

const FILTER =
  'Clauses joined by `and`: `event`, `outcome`, `identityId`, `actorId`, `sourceAddress` with `=` ' +
  '(a quoted string or `null`); `occurredAt` with `=`, `<`, `<=`, `>`, `>=` and an RFC 3339 ' +
  'date-time. Other fields and operators (`!=`, `contains`) are 400 naming the field: each filter ' +
  'is answered from an index.';

/** The stored audit trail: paged newest first, or followed after a cursor. */
export function auditEventRoutes(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'get',
      path: '/audit-events',
      operationId: 'listAuditEvents',
      summary: 'List or follow stored audit events',
      description: DESCRIPTION,
      tag: 'Audit events',
      parameters: [
        {
          name: 'limit',
          in: 'query',
          description: 'Page size.',
          schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
        },
        {
          name: 'filter',
          in: 'query',
          description: FILTER,
          schema: str,
          example: 'event = "auth.login" and outcome = "failure"',
        },
        {
          name: 'cursor',
          in: 'query',
          description: 'The next (older) page: `meta.pagination.nextCursor` of the previous one.',
          schema: str,
        },
        {
          name: 'after',
          in: 'query',
          description:
            'Follow: the events after this cursor, oldest first (`nextCursor` or `headCursor` of an earlier ' +
            'answer), or `now` for none yet and the head as `nextCursor`. Not together with `cursor`.',
          schema: str,
        },
      ],
      response: {
        status: 200,
        description: 'A page.',
        schema: obj({ data: { type: 'array', items: ref('AuditEvent') }, meta: ref('CursorListMeta') }, [], {
          additionalProperties: false,
        }),
      },
    },
  ];
}
