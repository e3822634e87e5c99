import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendData } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import type { RouteDeps } from './route-deps.js';

/**
 * `GET /version` on the management API, for admins only: the release, runtime and newest
 * migration tell an attacker which published weaknesses apply, so no anonymous endpoint names them (docs/operations.md, "Versions").
 */
export function versionRoutes(router: Router, deps: RouteDeps): void {
  const adminOnly = authenticate(deps.principals, { adminOnly: true });
  router.get('/version', adminOnly, async (ctx: Context) => {
    sendData(ctx, await deps.versionReport.current());
  });
}
