import Router from '@koa/router';
import type { Knex } from 'knex';

/**
 * Anonymous liveness and readiness: ready while the database answers and `notReady` names no
 * other reason (the listeners not serving the application yet, or any more; keys not loaded).
 */
export function healthRoutes(knex: Knex, notReady: () => string | undefined = () => undefined): Router {
  const router = new Router();
  router.get('/health/live', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/health/ready', async (ctx) => {
    const reason = notReady();
    if (reason) {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', reason };
      return;
    }
    try {
      await Promise.race([
        knex.raw('select 1'),
        new Promise((_, reject) => setTimeout(() => reject(new Error('database timeout')), 2000).unref()),
      ]);
      ctx.body = { status: 'ok' };
    } catch {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', reason: 'the database does not answer' };
    }
  });
  return router;
}
