import type { FilterClause } from '../db/list-query.js';
import { validationError } from '../errors/app-error.js';
import { parseFilter, type ListFields } from './list-filter.js';
import { parseInteger, refuseOffsetAndSort, singleValue } from './list-query.js';

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

/**
 * `limit`, `cursor` and `filter`. A cursor is the `meta.pagination.nextCursor` of the page before
 * (opaque to clients); offsets and sorting are refused rather than ignored, since this list pages
 * by cursor so that deliveries added meanwhile neither repeat nor go missing between pages.
 */
export function parseDeliveryList(query: Record<string, unknown>): DeliveryListQuery {
  refuseOffsetAndSort(query, 'is not supported here: this list pages by cursor, newest first');
  const limit =
    parseInteger(
      query,
      'limit',
      1,
      MAX_DELIVERY_LIMIT,
      `must be an integer from 1 to ${MAX_DELIVERY_LIMIT}`,
    ) ?? DEFAULT_DELIVERY_LIMIT;
  const cursor = singleValue(query, 'cursor');
  if (cursor !== undefined && !/^[0-9]{1,18}$/.test(cursor)) {
    throw validationError('cursor', 'must be the nextCursor of a page of this list');
  }
  return {
    limit,
    ...(cursor !== undefined && { before: cursor }),
    filter: parseFilter(singleValue(query, 'filter') ?? '', deliveryListFields),
  };
}
