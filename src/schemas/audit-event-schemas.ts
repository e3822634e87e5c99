import type { FilterClause } from '../db/list-query.js';
import type { TrailQuery } from '../db/trail-query.js';
import { validationError } from '../errors/app-error.js';
import { quote, type ListFields } from './list-filter.js';
import { parseListQuery, refuseOffsetAndSort, singleValue } from './list-query.js';
import { decodeTrailCursor } from './trail-cursor.js';

/**
 * `GET /audit-events` of the management API: the filter fields, each answered from an index of
 * migrations/022_audit_events.ts (`(column, tx, id)`; `occurred_at`), and cursors instead of
 * `offset` and `sort` (the order is the trail's own, `(tx, id)`).
 */
export const auditEventListFields = {
  event: { column: 'event', type: 'string', sortable: false },
  outcome: { column: 'outcome', type: 'string', sortable: false },
  identityId: { column: 'identity_id', type: 'string', sortable: false },
  actorId: { column: 'actor_id', type: 'string', sortable: false },
  sourceAddress: { column: 'source_address', type: 'string', sortable: false },
  occurredAt: { column: 'occurred_at', type: 'datetime', sortable: false },
} satisfies ListFields;

/** `after=now`: start following at the head of the trail, with no event yet. */
const AFTER_NOW = 'now';

const fieldOf = (column: string) =>
  Object.entries(auditEventListFields).find(([, f]) => f.column === column)!;

/**
 * Equality on the string fields and `=` or a range on `occurredAt`: what the indexes answer.
 * `!=` and `contains` would read the trail row by row, which at millions of rows is no query.
 */
function checkIndexed(clause: FilterClause): void {
  const [name, field] = fieldOf(clause.column);
  const allowed = field.type === 'datetime' ? ['=', '<', '<=', '>', '>='] : ['='];
  if (!allowed.includes(clause.op)) {
    throw validationError(
      'filter',
      `field ${quote(name)} takes only ${allowed.join(', ')} on this list (each filter is answered from an index)`,
    );
  }
}

/** Parses `ctx.query` of `GET /audit-events`; every bad value is a COULD_NOT_VALIDATE naming its parameter. */
export function parseAuditEventList(query: Record<string, unknown>): TrailQuery {
  refuseOffsetAndSort(
    query,
    'is not supported on this list: it is newest first and pages by cursor (meta.pagination.nextCursor)',
  );
  const { limit, filter } = parseListQuery(query, auditEventListFields);
  filter.forEach(checkIndexed);
  const cursor = singleValue(query, 'cursor');
  const after = singleValue(query, 'after');
  if (cursor !== undefined && after !== undefined) {
    throw validationError('after', 'cannot be given with cursor: cursor pages back, after follows forward');
  }
  if (after !== undefined) {
    return {
      order: 'oldest-first',
      limit,
      filter,
      after: after === AFTER_NOW ? AFTER_NOW : decodeTrailCursor(after, 'after'),
    };
  }
  return {
    order: 'newest-first',
    limit,
    filter,
    ...(cursor !== undefined && { before: decodeTrailCursor(cursor, 'cursor') }),
  };
}
