import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendData } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { parseAuditEventList } from '../schemas/audit-event-schemas.js';
import type { RouteDeps } from './route-deps.js';

/** `GET /audit-events` of the management API: the stored audit trail; admins only. */
export function auditEventRoutes(router: Router, deps: RouteDeps): void {
  router.get('/audit-events', authenticate(deps.principals, { adminOnly: true }), async (ctx: Context) => {
    const page = await deps.auditEvents.list(parseAuditEventList(ctx.query));
    sendData(ctx, page.items, 200, { pagination: page.pagination });
  });
}
