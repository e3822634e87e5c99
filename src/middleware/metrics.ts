import type { Context, Next } from 'koa';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

interface Series {
  count: number;
  sum: number;
  buckets: number[];
}

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
 * Prometheus metrics kept in memory per process: requests by listener, method, route template
 * and status, their latency histogram, and process gauges.
 */
export function createMetrics() {
  const series = new Map<string, Series>();
  const started = Date.now();

  return {
    middleware(listener: string) {
      return async function metricsMiddleware(ctx: Context, next: Next) {
        const t0 = process.hrtime.bigint();
        const method = ctx.method; // before an in-process resume rewrites it
        try {
          await next();
        } finally {
          const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
          const key = `listener="${listener}",method="${methodLabelOf(method)}",route="${routeLabelOf(ctx, method)}",status="${ctx.status}"`;
          const s = series.get(key) ?? { count: 0, sum: 0, buckets: BUCKETS.map(() => 0) };
          s.count += 1;
          s.sum += seconds;
          BUCKETS.forEach((b, i) => {
            if (seconds <= b) s.buckets[i]! += 1;
          });
          series.set(key, s);
        }
      };
    },

    render(): string {
      const lines = [
        '# HELP svc_http_requests_total HTTP requests answered.',
        '# TYPE svc_http_requests_total counter',
        ...[...series].map(([k, s]) => `svc_http_requests_total{${k}} ${s.count}`),
        '# HELP svc_http_request_duration_seconds Time to answer HTTP requests.',
        '# TYPE svc_http_request_duration_seconds histogram',
      ];
      for (const [k, s] of series) {
        BUCKETS.forEach((b, i) =>
          lines.push(`svc_http_request_duration_seconds_bucket{${k},le="${b}"} ${s.buckets[i]}`),
        );
        lines.push(`svc_http_request_duration_seconds_bucket{${k},le="+Inf"} ${s.count}`);
        lines.push(`svc_http_request_duration_seconds_sum{${k}} ${s.sum}`);
        lines.push(`svc_http_request_duration_seconds_count{${k}} ${s.count}`);
      }
      const mem = process.memoryUsage();
      lines.push(
        '# TYPE process_resident_memory_bytes gauge',
        `process_resident_memory_bytes ${mem.rss}`,
        '# TYPE nodejs_heap_used_bytes gauge',
        `nodejs_heap_used_bytes ${mem.heapUsed}`,
        '# TYPE process_uptime_seconds gauge',
        `process_uptime_seconds ${(Date.now() - started) / 1000}`,
      );
      return lines.join('\n') + '\n';
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
