import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';

/** API field → column, for list filters and sorting. */
export const authenticatorListFields = {
  id: { column: 'id', type: 'string' },
  identityId: { column: 'identity_id', type: 'string' },
  method: { column: 'method', type: 'string' },
  username: { column: 'username', type: 'string' },
  fingerprint: { column: 'cert_fingerprint', type: 'string' },
  createdAt: { column: 'created_at', type: 'datetime' },
} satisfies ListFields;

export const parseAuthenticatorList = listQueryParser(authenticatorListFields, 'createdAt asc');
