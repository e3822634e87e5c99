import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendCreated, sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import {
  identityCreateSchema,
  identityDisableSchema,
  identityPatchSchema,
  identityReplaceSchema,
  parseIdentityList,
} from '../schemas/identity-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/identities` of the management API; admins only. */
export function identityRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const identities = deps.identities;

  router.get('/identities', admin, async (ctx: Context) => {
    const page = await identities.list(parseIdentityList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.post('/identities', admin, parseBody(), async (ctx: Context) => {
    const id = await identities.create(parseInput(identityCreateSchema, bodyOf(ctx)));
    sendCreated(ctx, 'identities', id);
  });

  router.get('/identities/:id', admin, async (ctx: Context) => {
    sendData(ctx, await identities.get(pathId(ctx)));
  });

  router.put('/identities/:id', admin, parseBody(), async (ctx: Context) => {
    await identities.replace(pathId(ctx), parseInput(identityReplaceSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.patch('/identities/:id', admin, parseBody(), async (ctx: Context) => {
    await identities.patch(pathId(ctx), parseInput(identityPatchSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.delete('/identities/:id', admin, parseBody(), async (ctx: Context) => {
    await identities.delete(pathId(ctx));
    sendEmpty(ctx);
  });

  router.post('/identities/:id/disable', admin, parseBody(), async (ctx: Context) => {
    const input = parseInput(identityDisableSchema, bodyOf(ctx));
    await identities.disable(pathId(ctx), input.durationMinutes);
    sendEmpty(ctx);
  });

  router.post('/identities/:id/enable', admin, parseBody(), async (ctx: Context) => {
    await identities.enable(pathId(ctx));
    sendEmpty(ctx);
  });

  router.delete('/identities/:id/mfa', admin, parseBody(), async (ctx: Context) => {
    await identities.resetMfa(pathId(ctx));
    sendEmpty(ctx);
  });
}
