import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import { parseBody } from '../middleware/parse-body.js';
import { parseAuthenticatorList } from '../schemas/authenticator-schemas.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/authenticators` of the management API; admins only. */
export function authenticatorRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const authenticators = deps.authenticators;

  router.get('/authenticators', admin, async (ctx: Context) => {
    const page = await authenticators.list(parseAuthenticatorList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.get('/authenticators/:id', admin, async (ctx: Context) => {
    sendData(ctx, await authenticators.get(pathId(ctx)));
  });

  router.delete('/authenticators/:id', admin, parseBody(), async (ctx: Context) => {
    await authenticators.delete(pathId(ctx), principalOf(ctx).identityId);
    sendEmpty(ctx);
  });
}
