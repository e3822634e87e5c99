import Koa from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import { servesAccountPage, type ListenerSpec } from '../config/web-listeners.js';
import { notFound } from '../middleware/error-handler.js';
import { requestFrame } from '../middleware/request-frame.js';
import type { MetricsRegistry } from '../services/metrics-registry.js';

export interface ListenerRouters {
  /** Served on every listener: health, well-known. */
  common: Router[];
  client?: Router;
  management?: Router;
  /** The account page (`/account/`), where a listener serves both edge-client and edge-oidc. */
  account?: Router;
  /** Everything under /oidc and the root discovery document. */
  oidc?: Koa.Middleware;
  /** `GET /metrics`, on listeners with the `metrics` binding. */
  metricsEndpoint?: Router;
}

/** What every listener's app is built with, besides its routers. */
export interface ListenerAppOptions {
  logger: Logger;
  /** Records every request into the HTTP series. */
  metrics?: MetricsRegistry;
  /** Origins allowed cross-origin on this listener (cors.ts); none by default. */
  corsOriginAllowed?: (origin: string) => boolean;
  /** Answers 503 for a request its handler has not answered in time (response-deadline.ts). */
  responseDeadline?: Koa.Middleware;
}

/**
 * The middleware every app of a listener starts with, the application and the 503 "starting" and
 * "stopping" answers alike: request id and log line, HTTP metrics, the error envelope, security
 * headers and CORS, so that a browser client sees a 503 as a 503 and every answer is counted.
 */
export function listenerFrame(app: Koa, spec: ListenerSpec, options: ListenerAppOptions): Koa {
  app.silent = true;
  app.use(
    requestFrame({
      logger: options.logger.child({ listener: spec.name }),
      spec,
      metrics: options.metrics,
      corsOriginAllowed: options.corsOriginAllowed ?? (() => false),
    }),
  );
  return app;
}

/** The Koa app of one listener: only the API bindings it lists are reachable. */
export function buildKoaApp(spec: ListenerSpec, routers: ListenerRouters, options: ListenerAppOptions): Koa {
  const app = listenerFrame(new Koa(), spec, options);
  if (options.responseDeadline) app.use(options.responseDeadline);
  const mounted: Router[] = [...routers.common];
  if (routers.client && spec.apis.has('edge-client')) mounted.push(routers.client);
  if (routers.management && spec.apis.has('edge-management')) mounted.push(routers.management);
  if (routers.account && servesAccountPage(spec)) mounted.push(routers.account);
  if (routers.metricsEndpoint && spec.apis.has('metrics')) mounted.push(routers.metricsEndpoint);
  for (const router of mounted) {
    app.use(router.routes());
    app.use(router.allowedMethods({ throw: true }));
  }
  if (routers.oidc && spec.apis.has('edge-oidc')) app.use(routers.oidc);
  app.use(notFound);
  return app;
}
