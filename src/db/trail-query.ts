/*
 * A read of the stored audit trail (docs/adr/0015-audit-events-and-webhooks.md): a position
 * `(tx, id)`, a direction and filters. It lives in the database layer because both the request
 * parsers and the repositories need it. Rows are read in `(tx, id)` order and only those whose
 * transaction is below the oldest one still running, so that no row can appear later behind a
 * position a reader has passed.
 */
import type { FilterClause } from './list-query.js';

/** A place in the trail: a row's transaction id (`xid8`) and id, both as decimal text. */
export interface TrailPosition {
  tx: string;
  id: string;
}

interface TrailQueryBase {
  limit: number;
  /** Clauses on indexed columns only (the parser refuses the others). */
  filter: FilterClause[];
}

/** Newest first, from the newest readable row or from just below `before`. */
export interface NewestFirstQuery extends TrailQueryBase {
  order: 'newest-first';
  before?: TrailPosition;
}

/** Oldest first after `after` (`now`: the head of the trail, so no row yet): following the trail. */
export interface FollowQuery extends TrailQueryBase {
  order: 'oldest-first';
  after: TrailPosition | 'now';
}

export type TrailQuery = NewestFirstQuery | FollowQuery;

/** `(tx, id)` order of two positions: negative, zero or positive. */
export function comparePositions(a: TrailPosition, b: TrailPosition): number {
  const tx = BigInt(a.tx) - BigInt(b.tx);
  const id = tx === 0n ? BigInt(a.id) - BigInt(b.id) : tx;
  return id === 0n ? 0 : id < 0n ? -1 : 1;
}
