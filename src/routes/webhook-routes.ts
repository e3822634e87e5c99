import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import { parseInput } from '../schemas/parse-input.js';
import { parseDeliveryList } from '../schemas/webhook-delivery-schemas.js';
import { parseWebhookList, webhookCreateSchema, webhookPatchSchema } from '../schemas/webhook-schemas.js';
import type { WebhookCreatedView } from '../schemas/webhook-views.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/webhooks` of the management API and their deliveries; admins only. */
export function webhookRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const webhooks = deps.webhooks;
  const deliveries = deps.webhookDeliveries;

  router.get('/webhooks', admin, async (ctx: Context) => {
    const page = await webhooks.list(parseWebhookList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  // The signing secret is in this answer only; it is never logged (the request log has no bodies).
  router.post('/webhooks', admin, parseBody(), async (ctx: Context) => {
    const { id, secret } = await webhooks.create(parseInput(webhookCreateSchema, bodyOf(ctx)));
    const created: WebhookCreatedView = { id, _links: { self: { href: `./webhooks/${id}` } }, secret };
    sendData(ctx, created, 201);
  });

  router.get('/webhooks/:id', admin, async (ctx: Context) => {
    sendData(ctx, await webhooks.get(pathId(ctx)));
  });

  router.patch('/webhooks/:id', admin, parseBody(), async (ctx: Context) => {
    await webhooks.patch(pathId(ctx), parseInput(webhookPatchSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.delete('/webhooks/:id', admin, parseBody(), async (ctx: Context) => {
    await webhooks.remove(pathId(ctx));
    sendEmpty(ctx);
  });

  router.post('/webhooks/:id/rotate-secret', admin, parseBody(), async (ctx: Context) => {
    sendData(ctx, await webhooks.rotateSecret(pathId(ctx)));
  });

  router.get('/webhooks/:id/deliveries', admin, async (ctx: Context) => {
    const page = await deliveries.list(pathId(ctx), parseDeliveryList(ctx.query));
    sendData(ctx, page.items, 200, { pagination: page.pagination });
  });

  router.post('/webhooks/:id/deliveries/:deliveryId/retry', admin, parseBody(), async (ctx: Context) => {
    sendData(ctx, await deliveries.retry(pathId(ctx), pathId(ctx, 'deliveryId')));
  });
}
