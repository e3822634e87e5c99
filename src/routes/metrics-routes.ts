import Router from '@koa/router';
import type { MetricsRegistry } from '../services/metrics-registry.js';

/** `GET /metrics` in the Prometheus text format. */
export function metricsRoutes(metrics: MetricsRegistry): Router {
  const router = new Router();
  router.get('/metrics', async (ctx) => {
    ctx.type = metrics.contentType;
    ctx.body = await metrics.render();
  });
  return router;
}
