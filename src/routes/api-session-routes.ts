import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendData, sendList } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import { parseApiSessionList } from '../schemas/api-session-schemas.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/api-sessions` and `/identities/:id/api-sessions` of the management API: who is signed in; admins only. */
export function apiSessionRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const view = deps.apiSessionView;

  router.get('/api-sessions', admin, async (ctx: Context) => {
    const page = await view.list(parseApiSessionList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.get('/api-sessions/:id', admin, async (ctx: Context) => {
    sendData(ctx, await view.get(pathId(ctx)));
  });

  router.get('/identities/:id/api-sessions', admin, async (ctx: Context) => {
    const page = await view.listForIdentity(pathId(ctx), parseApiSessionList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });
}

/** `GET /current-identity/api-sessions` of the client API: the caller's own live sessions. */
export function ownApiSessionRoutes(router: Router, deps: RouteDeps): void {
  router.get('/current-identity/api-sessions', authenticate(deps.principals), async (ctx: Context) => {
    const { identityId, sessionId } = principalOf(ctx);
    const page = await deps.apiSessionView.listOwn({ identityId, sessionId }, parseApiSessionList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });
}
