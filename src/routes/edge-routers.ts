import Router from '@koa/router';
import type { RouteDeps } from './route-deps.js';
import { rateLimit } from '../middleware/rate-limit.js';
import { checkQuery } from '../middleware/check-input.js';
import { authenticateRoutes, currentIdentityRoutes, currentSessionRoutes } from './authenticate-routes.js';
import { mfaRoutes } from './mfa-routes.js';
import { passkeyRoutes } from './passkey-routes.js';
import { identityRoutes } from './identity-routes.js';
import { enrollmentRoutes } from './enrollment-routes.js';
import { authenticatorRoutes } from './authenticator-routes.js';
import { enrollRoutes } from './enroll-routes.js';
import { authPolicyRoutes } from './auth-policy-routes.js';
import { publicSignerRoutes, signerRoutes } from './signer-routes.js';
import { caRoutes } from './ca-routes.js';
import { keyRoutes } from './key-routes.js';
import { specRoutes } from './spec-routes.js';
import { apiSessionRoutes, ownApiSessionRoutes } from './api-session-routes.js';
import { apiSessionEndingRoutes, ownApiSessionEndingRoutes } from './api-session-ending-routes.js';
import { webhookRoutes } from './webhook-routes.js';
import { auditEventRoutes } from './audit-event-routes.js';
import { versionRoutes } from './version-routes.js';

/** The edge-client and edge-management routers (`/edge/{client,management}/v1`). */
export function edgeRouters(deps: RouteDeps): { client: Router; management: Router } {
  const client = new Router({ prefix: '/edge/client/v1' });
  client.use(checkQuery);
  client.use(['/authenticate', '/enroll'], rateLimit(deps.loginLimiter));
  authenticateRoutes(client, deps);
  currentIdentityRoutes(client, deps);
  currentSessionRoutes(client, deps);
  ownApiSessionRoutes(client, deps);
  ownApiSessionEndingRoutes(client, deps);
  mfaRoutes(client, deps);
  passkeyRoutes(client, deps);
  enrollRoutes(client, deps);
  publicSignerRoutes(client, deps);
  specRoutes(client, 'client');

  const management = new Router({ prefix: '/edge/management/v1' });
  management.use(checkQuery);
  management.use('/authenticate', rateLimit(deps.loginLimiter));
  authenticateRoutes(management, deps);
  currentIdentityRoutes(management, deps);
  identityRoutes(management, deps);
  apiSessionRoutes(management, deps);
  apiSessionEndingRoutes(management, deps);
  enrollmentRoutes(management, deps);
  authenticatorRoutes(management, deps);
  authPolicyRoutes(management, deps);
  signerRoutes(management, deps);
  caRoutes(management, deps);
  keyRoutes(management, deps);
  webhookRoutes(management, deps);
  auditEventRoutes(management, deps);
  versionRoutes(management, deps);
  specRoutes(management, 'management');
  return { client, management };
}
