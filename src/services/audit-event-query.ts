import type { Knex } from 'knex';
import { comparePositions, type TrailPosition, type TrailQuery } from '../db/trail-query.js';
import { auditEventListRepository } from '../repositories/audit-event-list-repository.js';
import type { AuditEventView, CursorPagination } from '../schemas/audit-event-views.js';
import { encodeTrailCursor } from '../schemas/trail-cursor.js';
import { auditEventView } from './audit-event-view.js';

export interface AuditEventPage {
  items: AuditEventView[];
  pagination: CursorPagination;
}

const positionOf = (row: { tx: string; id: string }): TrailPosition => ({ tx: row.tx, id: row.id });

/**
 * The read side of the stored audit trail (docs/operations.md, "Querying the audit trail"): pages
 * newest first, and following it oldest first after a cursor. Cursors are positions `(tx, id)`;
 * the head cursor `(head, 0)` sits before every row of a transaction not yet ended when the read
 * ran and after every row the read could see.
 */
export function createAuditEventQuery({ knex }: { knex: Knex }) {
  return {
    async list(q: TrailQuery): Promise<AuditEventPage> {
      // One row past the page tells whether another page follows.
      const read = await auditEventListRepository.page(knex, { ...q, limit: q.limit + 1 });
      const rows = read.rows.slice(0, q.limit);
      const headPosition = { tx: read.head, id: '0' };
      const last = rows.at(-1);
      let next: TrailPosition | null;
      if (read.rows.length > q.limit && last) {
        next = positionOf(last);
      } else if (q.order === 'newest-first') {
        next = null;
      } else {
        // Every matching row below the head was returned: the next read may start at the head
        // (never moving back, should the given cursor already be past it).
        next = q.after !== 'now' && comparePositions(q.after, headPosition) > 0 ? q.after : headPosition;
      }
      return {
        items: rows.map(auditEventView),
        pagination: {
          limit: q.limit,
          nextCursor: next && encodeTrailCursor(next),
          headCursor: encodeTrailCursor(headPosition),
        },
      };
    },
  };
}

export type AuditEventQuery = ReturnType<typeof createAuditEventQuery>;
