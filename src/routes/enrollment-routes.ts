import type Router from '@koa/router';
import type { Context } from 'koa';
import { sendCreated, sendData, sendEmpty, sendList } from '../errors/envelope.js';
import { authenticate } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import {
  enrollmentCreateSchema,
  enrollmentRefreshSchema,
  parseEnrollmentList,
} from '../schemas/enrollment-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { pathId } from './path-id.js';
import type { RouteDeps } from './route-deps.js';

/** `/enrollments` of the management API; admins only. */
export function enrollmentRoutes(router: Router, deps: RouteDeps): void {
  const admin = authenticate(deps.principals, { adminOnly: true });
  const enrollments = deps.enrollments;

  router.get('/enrollments', admin, async (ctx: Context) => {
    const page = await enrollments.list(parseEnrollmentList(ctx.query));
    sendList(ctx, page.items, page.pagination);
  });

  router.post('/enrollments', admin, parseBody(), async (ctx: Context) => {
    const enrollment = await enrollments.create(parseInput(enrollmentCreateSchema, bodyOf(ctx)));
    sendCreated(ctx, 'enrollments', enrollment.id);
  });

  router.get('/enrollments/:id', admin, async (ctx: Context) => {
    sendData(ctx, await enrollments.get(pathId(ctx)));
  });

  router.delete('/enrollments/:id', admin, parseBody(), async (ctx: Context) => {
    await enrollments.delete(pathId(ctx));
    sendEmpty(ctx);
  });

  router.post('/enrollments/:id/refresh', admin, parseBody(), async (ctx: Context) => {
    const input = parseInput(enrollmentRefreshSchema, bodyOf(ctx));
    await enrollments.refresh(pathId(ctx), input.expiresAt);
    sendEmpty(ctx);
  });
}
