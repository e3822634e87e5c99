import Koa from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { ListenerSpec } from '../config/web-listeners.js';
import { requestContext } from '../middleware/request-context.js';
import { errorHandler, notFound } from '../middleware/error-handler.js';
import { securityHeaders } from '../middleware/security-headers.js';
import { cors } from '../middleware/cors.js';
import { httpMetrics } from '../middleware/metrics.js';
import type { MetricsRegistry } from '../services/metrics-registry.js';

export interface ListenerRouters {
  /** Served on every listener: health, well-known. */
  common: Router[];
  client?: Router;
  management?: Router;
  /** Everything under /oidc and the root discovery document. */
  oidc?: Koa.Middleware;
  metrics?: Router;
  metricsRecorder?: MetricsRegistry;
}

/** The Koa app of one listener: only the API bindings it lists are reachable. */
export function buildKoaApp(
  spec: ListenerSpec,
  routers: ListenerRouters,
  logger: Logger,
  corsOriginAllowed: (origin: string) => boolean = () => false,
  /** Answers 503 for a request its handler has not answered in time (response-deadline.ts). */
  responseDeadline?: Koa.Middleware,
): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(requestContext(logger.child({ listener: spec.name })));
  // Whatever depends on the address the client used (the OIDC issuer) chooses among this
  // listener's addresses only: a Host naming another listener must not reach its issuer.
  app.use((ctx, next) => {
    ctx.state.listener = spec;
    return next();
  });
  if (routers.metricsRecorder) app.use(httpMetrics(routers.metricsRecorder, spec.name));
  app.use(errorHandler);
  app.use(securityHeaders);
  app.use(cors(corsOriginAllowed));
  if (responseDeadline) app.use(responseDeadline);
  const mounted: Router[] = [...routers.common];
  if (routers.client && spec.apis.has('edge-client')) mounted.push(routers.client);
  if (routers.management && spec.apis.has('edge-management')) mounted.push(routers.management);
  if (routers.metrics && spec.apis.has('metrics')) mounted.push(routers.metrics);
  for (const router of mounted) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: true }));
  }
  if (routers.oidc && spec.apis.has('edge-oidc')) app.use(routers.oidc);
  app.use(notFound);
  return app;
}
