import type { Context } from 'koa';
import type { MetricsRegistry } from '../services/metrics-registry.js';

interface MatchedLayer {
  path: unknown;
  methods: string[];
}

/**
 * The route label: the template of the route that answered (`/edge/management/v1/identities/:id`,
 * from @koa/router's `ctx.matched`, skipping `use` layers such as input checks and rate limits),
 * or the name a dispatcher gave in `ctx.state.routeTemplate` (oidc-provider's endpoints), else
 * `unmatched`. Templates come from code, so the set of series is fixed whatever paths clients
 * send, and ids and tokens never become label values.
 */
export function routeLabelOf(ctx: Context, method = ctx.method): string {
  const named = (ctx.state as { routeTemplate?: unknown }).routeTemplate;
  if (typeof named === 'string') return named;
  const layers = (ctx as Context & { matched?: MatchedLayer[] }).matched ?? [];
  const route = layers.findLast((l) => l.methods.includes(method) && typeof l.path === 'string');
  return route ? (route.path as string) : 'unmatched';
}

/** Methods that label a series as themselves; any other (e.g. PROPFIND) is `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const methodLabelOf = (method: string) => (METHODS.has(method) ? method : 'other');

/**
 * Records one answered request into the registry's HTTP series: by listener, method (as received,
 * before an in-process resume rewrites it), route template and status, with its latency.
 */
export function recordHttp(
  metrics: MetricsRegistry,
  listener: string,
  ctx: Context,
  method: string,
  seconds: number,
): void {
  metrics.observeHttp(
    { listener, method: methodLabelOf(method), route: routeLabelOf(ctx, method), status: ctx.status },
    seconds,
  );
}
