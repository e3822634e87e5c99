import { admin } from './crud-routes.js';
import type { RouteDoc } from './operations.js';
import { emptyResponse } from './session-paths.js';

const TAG = 'API sessions';

const ENDS_AS_LOGOUT =
  'The session ends as at its logout, on every instance within a second: its access tokens and its ' +
  '`svc-session` token are refused (401), and its refresh token with `invalid_grant`.';

/** Ending API sessions as an admin: one by its id, or all of an identity's. */
export function managementApiSessionEndingRoutes(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'delete',
      path: '/api-sessions/:id',
      operationId: 'deleteApiSession',
      summary: 'End an API session (legacy or OIDC)',
      description: ENDS_AS_LOGOUT,
      tag: TAG,
      parsesBody: true,
      response: emptyResponse('The session has ended.'),
    },
    {
      ...admin,
      method: 'delete',
      path: '/identities/:id/api-sessions',
      operationId: 'deleteIdentityApiSessions',
      summary: 'End every API session of an identity',
      description:
        `All of them in one transaction. ${ENDS_AS_LOGOUT} The identity may log in again: disable or ` +
        'delete it to stop that.',
      tag: TAG,
      parsesBody: true,
      response: emptyResponse('Its sessions have ended (none is fine).'),
    },
  ];
}

/** An identity ending one of its own API sessions. */
export function clientApiSessionEndingRoutes(): RouteDoc[] {
  return [
    {
      method: 'delete',
      path: '/current-identity/api-sessions/:id',
      operationId: 'deleteOwnApiSession',
      summary: "End one of the caller's API sessions (any kind, the calling one included)",
      description: `${ENDS_AS_LOGOUT} The session of another identity is 404, as an unknown id is.`,
      tag: TAG,
      access: 'authenticated',
      parsesBody: true,
      response: emptyResponse('The session has ended.'),
    },
  ];
}
