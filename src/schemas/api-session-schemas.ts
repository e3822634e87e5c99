import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';

/**
 * Lists of live API sessions (`/api-sessions`, `/identities/{id}/api-sessions`,
 * `/current-identity/api-sessions`): API field → column of the live-session table the repository
 * derives (repositories/api-sessions-repository.ts `liveSessions`).
 */
export const apiSessionListFields = {
  id: { column: 'id', type: 'string' },
  identityId: { column: 'identity_id', type: 'string' },
  identityName: { column: 'identity_name', type: 'string' },
  kind: { column: 'kind', type: 'string' },
  authMethod: { column: 'auth_method', type: 'string' },
  ipAddress: { column: 'ip_address', type: 'string' },
  isMfaRequired: { column: 'mfa_required', type: 'boolean' },
  isMfaComplete: { column: 'mfa_complete', type: 'boolean' },
  createdAt: { column: 'created_at', type: 'datetime' },
  lastActivityAt: { column: 'last_activity_at', type: 'datetime' },
  expiresAt: { column: 'expires_at', type: 'datetime' },
} satisfies ListFields;

export const parseApiSessionList = listQueryParser(apiSessionListFields, 'createdAt asc');
