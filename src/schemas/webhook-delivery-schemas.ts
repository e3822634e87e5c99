import type { FilterClause } from '../db/list-query.js';
import { validationError } from '../errors/app-error.js';
import { parseFilter, type ListFields } from './list-filter.js';
import { MAX_PARAM_BYTES } from './list-query.js';

export const DEFAULT_DELIVERY_LIMIT = 20;
export const MAX_DELIVERY_LIMIT = 100;

/**
 * A page of a webhook's deliveries, newest first: at most `limit` deliveries whose sequence is
 * below `before` (the `nextCursor` of the page before), matching `filter`.
 */
export interface DeliveryListQuery {
  limit: number;
  before?: string;
  filter: FilterClause[];
}

/** API field → column of `webhook_deliveries`, for the filter (the order is fixed: newest first). */
export const deliveryListFields = {
  status: { column: 'status', type: 'string', sortable: false },
  event: { column: 'event', type: 'string', sortable: false },
  createdAt: { column: 'created_at', type: 'datetime', sortable: false },
} satisfies ListFields;

function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw validationError(name, 'must be given once');
  if (Buffer.byteLength(value, 'utf8') > MAX_PARAM_BYTES) {
    throw validationError(name, `must be at most ${MAX_PARAM_BYTES} bytes long`);
  }
  return value;
}

/**
 * `limit`, `cursor` and `filter`. A cursor is the `meta.pagination.nextCursor` of the page before
 * (opaque to clients); offsets and sorting are refused rather than ignored, since this list pages
 * by cursor so that deliveries added meanwhile neither repeat nor go missing between pages.
 */
export function parseDeliveryList(query: Record<string, unknown>): DeliveryListQuery {
  for (const name of ['offset', 'sort']) {
    if (query[name] !== undefined) {
      throw validationError(name, 'is not supported here: this list pages by cursor, newest first');
    }
  }
  const limitText = single(query, 'limit');
  let limit = DEFAULT_DELIVERY_LIMIT;
  if (limitText !== undefined) {
    const reason = `must be an integer from 1 to ${MAX_DELIVERY_LIMIT}`;
    if (!/^[0-9]{1,4}$/.test(limitText)) throw validationError('limit', reason);
    limit = Number(limitText);
    if (limit < 1 || limit > MAX_DELIVERY_LIMIT) throw validationError('limit', reason);
  }
  const cursor = single(query, 'cursor');
  if (cursor !== undefined && !/^[0-9]{1,18}$/.test(cursor)) {
    throw validationError('cursor', 'must be the nextCursor of a page of this list');
  }
  return {
    limit,
    ...(cursor !== undefined && { before: cursor }),
    filter: parseFilter(single(query, 'filter') ?? '', deliveryListFields),
  };
}
