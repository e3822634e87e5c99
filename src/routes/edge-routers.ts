import Router from '@koa/router';
import type { RouteDeps } from './route-deps.js';
import { authenticateRoutes, currentIdentityRoutes, currentSessionRoutes } from './authenticate-routes.js';

/** The edge-client and edge-management routers (`/edge/{client,management}/v1`). */
export function edgeRouters(deps: RouteDeps): { client: Router; management: Router } {
  const client = new Router({ prefix: '/edge/client/v1' });
  authenticateRoutes(client, deps);
  currentIdentityRoutes(client, deps);
  currentSessionRoutes(client, deps);

  const management = new Router({ prefix: '/edge/management/v1' });
  authenticateRoutes(management, deps);
  currentIdentityRoutes(management, deps);
  return { client, management };
}
