import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendEmpty } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import { parseBody } from '../middleware/parse-body.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/**
 * Ending API sessions on the management API (admins only): one session by its id, or every
 * session of an identity. The listing of the same paths is in api-session-routes.ts.
 */
export function apiSessionEndingRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });

  router.delete('/api-sessions/:id', admin, parseBody(), async (ctx: Context) => {
    await deps.apiSessionEnding.endSession(pathId(ctx));
    sendEmpty(ctx);
  });

  router.delete('/identities/:id/api-sessions', admin, parseBody(), async (ctx: Context) => {
    await deps.apiSessionEnding.endIdentitySessions(pathId(ctx));
    sendEmpty(ctx);
  });
}

/** An identity ends one of its own sessions (client API): any of them, the calling one included. */
export function ownApiSessionEndingRoutes(router: Router, deps: RouteDeps): void {
  router.delete(
    '/current-identity/api-sessions/:id',
    authenticate(deps.principals),
    parseBody(),
    async (ctx: Context) => {
      await deps.apiSessionEnding.endOwnSession(principalOf(ctx).identityId, pathId(ctx));
      sendEmpty(ctx);
    },
  );
}
