import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendData, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import type { RouteDeps } from './route-deps.js';

/**
 * `GET /keys` and `POST /keys/rotate` on the management API (admin): the signing
 * keys with their state, and a rotation that publishes a new key now and signs with it after
 * `edge.oidc.keyRotationGrace`.
 */
export function keyRoutes(router: Router, deps: RouteDeps): void {
  const { keys } = deps.oidc;
  const adminOnly = authenticate(deps.principals, { adminOnly: true });
  router.get('/keys', adminOnly, async (ctx: Context) => {
    const list = await keys.list();
    sendList(ctx, list, { limit: Math.max(10, list.length), offset: 0, totalCount: list.length });
  });
  router.post('/keys/rotate', adminOnly, async (ctx: Context) => {
    sendData(ctx, await keys.rotate());
  });
}
