import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendCreated, sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import { parseSignerList, signerCreateSchema, signerPatchSchema } from '../schemas/signer-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { publicSignerView, signerView } from '../services/signer-service.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/external-jwt-signers` of the management API; admins only. */
export function signerRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const signers = deps.signers;

  router.get('/external-jwt-signers', admin, async (ctx: Context) => {
    const page = await signers.list(parseSignerList(ctx.query));
    sendList(ctx, page.items.map(signerView), page.pagination);
  });

  router.post('/external-jwt-signers', admin, parseBody(), async (ctx: Context) => {
    const id = await signers.create(parseInput(signerCreateSchema, bodyOf(ctx)));
    sendCreated(ctx, 'external-jwt-signers', id);
  });

  router.get('/external-jwt-signers/:id', admin, async (ctx: Context) => {
    sendData(ctx, signerView(await signers.get(pathId(ctx))));
  });

  router.put('/external-jwt-signers/:id', admin, parseBody(), async (ctx: Context) => {
    await signers.replace(pathId(ctx), parseInput(signerCreateSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.patch('/external-jwt-signers/:id', admin, parseBody(), async (ctx: Context) => {
    await signers.patch(pathId(ctx), parseInput(signerPatchSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.delete('/external-jwt-signers/:id', admin, parseBody(), async (ctx: Context) => {
    await signers.remove(pathId(ctx));
    sendEmpty(ctx);
  });
}

/**
 * `GET /edge/client/v1/external-jwt-signers`, anonymous: enabled signers only,
 * with what a client needs to obtain a JWT from the IdP and no key material.
 */
export function publicSignerRoutes(router: Router, deps: RouteDeps): void {
  router.get('/external-jwt-signers', async (ctx: Context) => {
    const page = await deps.signers.list(parseSignerList(ctx.query), true);
    sendList(ctx, page.items.map(publicSignerView), page.pagination);
  });
}
