import Router from '@koa/router';
import type { Metrics } from '../middleware/metrics.js';

/** `GET /metrics` in the Prometheus text format. */
export function metricsRoutes(metrics: Metrics): Router {
  const router = new Router();
  router.get('/metrics', (ctx) => {
    ctx.type = 'text/plain; version=0.0.4';
    ctx.body = metrics.render();
  });
  return router;
}
