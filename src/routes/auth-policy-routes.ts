import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendCreated, sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import { parsePolicyList, policyCreateSchema, policyPatchSchema } from '../schemas/policy-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/auth-policies` of the management API; admins only. */
export function authPolicyRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const policies = deps.policies;

  router.get('/auth-policies', admin, async (ctx: Context) => {
    const page = await policies.list(parsePolicyList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.post('/auth-policies', admin, parseBody(), async (ctx: Context) => {
    const id = await policies.create(parseInput(policyCreateSchema, bodyOf(ctx)));
    sendCreated(ctx, 'auth-policies', id);
  });

  router.get('/auth-policies/:id', admin, async (ctx: Context) => {
    sendData(ctx, await policies.get(pathId(ctx)));
  });

  router.put('/auth-policies/:id', admin, parseBody(), async (ctx: Context) => {
    await policies.replace(pathId(ctx), parseInput(policyCreateSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.patch('/auth-policies/:id', admin, parseBody(), async (ctx: Context) => {
    await policies.patch(pathId(ctx), parseInput(policyPatchSchema, bodyOf(ctx)));
    sendEmpty(ctx);
  });

  router.delete('/auth-policies/:id', admin, parseBody(), async (ctx: Context) => {
    await policies.remove(pathId(ctx));
    sendEmpty(ctx);
  });
}
