import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Knex } from 'knex';
import type { AuditEvent } from './audit-trail.js';
import { controllerVersion, runtimeVersion } from '../version.js';

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
// Argon2id with the OWASP minimum takes tens of milliseconds; a queue behind the thread pool, more.
const PASSWORD_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
// Far more than a pool's worth of queries in flight: a start time whose query never reports back
// is dropped with the rest beyond it, so the map stays bounded.
const MAX_QUERIES_IN_FLIGHT = 10_000;
const QUERY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * Every label value comes from a fixed list, whatever clients send or services record: a value
 * outside it is counted as `other`, so the number of series stays bounded.
 */
const bounded = (allowed: readonly string[]) => {
  const set = new Set(allowed);
  return (value: unknown) => (typeof value === 'string' && set.has(value) ? value : 'other');
};
const loginMethod = bounded(['password', 'cert', 'ext-jwt', 'passkey']);
const secondFactorMethod = bounded(['totp', 'ext-jwt', 'recovery-code', 'passkey']);
const outcome = bounded(['success', 'failure', 'lockout']);
const grantType = bounded([
  'authorization_code',
  'refresh_token',
  'client_credentials',
  'urn:ietf:params:oauth:grant-type:device_code',
  'urn:ietf:params:oauth:grant-type:token-exchange',
]);

type PoolLike = {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
};

/**
 * The process's Prometheus registry: prom-client's default process and Node series, the build's
 * release, the HTTP series (recorded by `middleware/metrics.ts`), and the series of security
 * events, token grants, password hashing, the database and the revocation feed. One per process;
 * the parts that feed it get a small callback each (an observer), so nothing below imports it.
 */
export function createMetricsRegistry() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  // The Prometheus "info" idiom: a constant 1 whose labels say which build answers, so that a
  // query can join any series to the version that produced it (during a rolling upgrade, say).
  new Gauge({
    name: 'svc_build_info',
    help: 'Always 1; its labels name the controller version and the Node.js runtime of this instance.',
    labelNames: ['version', 'node'] as const,
    registers,
  }).set({ version: controllerVersion, node: runtimeVersion }, 1);

  const httpRequests = new Counter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests answered, by listener, method, route template and status.',
    labelNames: ['listener', 'method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time to answer HTTP requests.',
    labelNames: ['listener', 'method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  // The children of each label set, kept so that a request does not hash its labels twice; as
  // bounded as the labels themselves.
  const httpSeries = new Map<
    string,
    { requests: ReturnType<typeof httpRequests.labels>; duration: ReturnType<typeof httpDuration.labels> }
  >();
  const logins = new Counter({
    name: 'svc_logins_total',
    help: 'Primary logins (edge authenticate and OIDC login), by method and outcome.',
    labelNames: ['method', 'outcome'] as const,
    registers,
  });
  const secondFactors = new Counter({
    name: 'svc_second_factors_total',
    help: 'Second-factor checks (TOTP, secondary external JWT, recovery code), by method and outcome.',
    labelNames: ['method', 'outcome'] as const,
    registers,
  });
  const passkeyRegistrations = new Counter({
    name: 'svc_passkey_registrations_total',
    help: 'Passkey registrations (an extension beyond the specification), by outcome (success, failure).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const passkeyAssertions = new Counter({
    name: 'svc_passkey_assertions_total',
    help:
      'Passkey assertions at a login, by purpose (passwordless, second-factor) and outcome (success, ' +
      'failure, lockout, clone-suspected: a signature counter that did not grow).',
    labelNames: ['purpose', 'outcome'] as const,
    registers,
  });
  const passkeyOutcome = bounded(['success', 'failure', 'lockout', 'clone-suspected']);
  const passkeyPurpose = bounded(['passwordless', 'second-factor']);
  /** A login decision made with a passkey also counts as a passkey assertion of that purpose. */
  const countPasskey = (e: AuditEvent, purpose: string) => {
    if (e.method === 'passkey') passkeyAssertions.inc({ purpose, outcome: passkeyOutcome(e.outcome) });
  };
  const revocationsPublished = new Counter({
    name: 'svc_revocations_published_total',
    help: 'Revocations this process wrote to the change feed.',
    registers,
  });
  const revocationsReceived = new Counter({
    name: 'svc_revocations_received_total',
    help: 'Revocations this process applied from the change feed.',
    registers,
  });
  const keyRotations = new Counter({
    name: 'svc_key_rotations_total',
    help: 'Signing key rotations.',
    registers,
  });
  const tokenGrants = new Counter({
    name: 'svc_token_grants_total',
    help: 'Token endpoint grants, by grant type and outcome (success or failure).',
    labelNames: ['grant_type', 'outcome'] as const,
    registers,
  });
  const deviceFlow = new Counter({
    name: 'svc_device_flow_events_total',
    help:
      'Device authorization grant (RFC 8628): device codes issued (authorization), confirmed and declined ' +
      'by a person, polled after expiry (expired), wrong user codes and the addresses refused for them (throttled).',
    labelNames: ['event'] as const,
    registers,
  });
  const passwordVerify = new Histogram({
    name: 'svc_password_verify_seconds',
    help: 'Time of one Argon2id password verification (the dummy one for unknown users included).',
    buckets: PASSWORD_BUCKETS,
    registers,
  });
  const webhookAttempts = new Counter({
    name: 'svc_webhook_attempts_total',
    help:
      'Webhook delivery attempts this instance made, by result: delivered (2xx), retrying, failed (its ' +
      '24 hours are over) and lost (its lease had passed to another instance; not recorded).',
    labelNames: ['result'] as const,
    registers,
  });
  const webhookResult = bounded(['delivered', 'retrying', 'failed', 'lost']);
  const queryDuration = new Histogram({
    name: 'svc_db_query_duration_seconds',
    help: 'Time of answered database queries, from knex (the change feed and rate-limit store excepted).',
    buckets: QUERY_BUCKETS,
    registers,
  });

  /** The audit events that are counted; every other event is only logged. */
  const auditCounters: Record<string, (e: AuditEvent) => void> = {
    'auth.login': (e) => {
      logins.inc({ method: loginMethod(e.method), outcome: outcome(e.outcome) });
      countPasskey(e, 'passwordless');
    },
    'auth.second-factor': (e) => {
      secondFactors.inc({ method: secondFactorMethod(e.method), outcome: outcome(e.outcome) });
      countPasskey(e, 'second-factor');
    },
    'passkey.registered': () => passkeyRegistrations.inc({ outcome: 'success' }),
    'passkey.registration-failed': () => passkeyRegistrations.inc({ outcome: 'failure' }),
    // Besides the failure the login records for the same attempt.
    'passkey.clone-suspected': (e) =>
      passkeyAssertions.inc({ purpose: passkeyPurpose(e.purpose), outcome: 'clone-suspected' }),
    'revocation.published': () => revocationsPublished.inc(),
    'revocation.received': () => revocationsReceived.inc(),
    'key.rotated': () => keyRotations.inc(),
    'oidc.device.authorization': () => deviceFlow.inc({ event: 'authorization' }),
    'oidc.device.confirmed': () => deviceFlow.inc({ event: 'confirmed' }),
    'oidc.device.declined': () => deviceFlow.inc({ event: 'declined' }),
    'oidc.device.expired': () => deviceFlow.inc({ event: 'expired' }),
    'oidc.device.user-code-wrong': () => deviceFlow.inc({ event: 'user-code-wrong' }),
    'oidc.device.user-code-throttled': () => deviceFlow.inc({ event: 'throttled' }),
  };

  return {
    registry,
    contentType: registry.contentType,

    /** One answered request; labels already bounded by the caller (route templates, methods). */
    observeHttp(
      labels: { listener: string; method: string; route: string; status: number },
      seconds: number,
    ) {
      const key = `${labels.listener} ${labels.method} ${labels.route} ${labels.status}`;
      let series = httpSeries.get(key);
      if (!series) {
        const l = { ...labels, status: String(labels.status) };
        series = { requests: httpRequests.labels(l), duration: httpDuration.labels(l) };
        httpSeries.set(key, series);
      }
      series.requests.inc();
      series.duration.observe(seconds);
    },

    /** An audit-trail listener: logins, second factors, revocations, key rotations, device flow events. */
    countAuditEvent(event: AuditEvent): void {
      if (Object.hasOwn(auditCounters, event.event)) auditCounters[event.event]!(event);
    },

    /** A token endpoint outcome, as the OIDC provider reports it. */
    countGrant(type: unknown, succeeded: boolean): void {
      tokenGrants.inc({ grant_type: grantType(type), outcome: succeeded ? 'success' : 'failure' });
    },

    /** One webhook delivery attempt's result. */
    countWebhookAttempt(result: string): void {
      webhookAttempts.inc({ result: webhookResult(result) });
    },

    /** Time of one Argon2id verification. */
    observePasswordVerify(seconds: number): void {
      passwordVerify.observe(seconds);
    },

    /**
     * The database: query times from knex's query events, and the pool's connections in use and
     * requests waiting for one, read when scraped.
     */
    watchDatabase(knex: Knex): void {
      // Failed queries are dropped, not timed: the histogram is the time of answered queries.
      const started = new Map<string, bigint>();
      type QueryEvent = { __knexQueryUid?: string };
      knex.on('query', (query: QueryEvent) => {
        if (!query?.__knexQueryUid) return;
        if (started.size >= MAX_QUERIES_IN_FLIGHT) started.clear();
        started.set(query.__knexQueryUid, process.hrtime.bigint());
      });
      knex.on('query-response', (_response: unknown, query: QueryEvent) => {
        const uid = query?.__knexQueryUid;
        const t0 = uid === undefined ? undefined : started.get(uid);
        if (t0 === undefined) return;
        started.delete(uid!);
        queryDuration.observe(Number(process.hrtime.bigint() - t0) / 1e9);
      });
      knex.on('query-error', (_err: unknown, query: QueryEvent) => {
        if (query?.__knexQueryUid) started.delete(query.__knexQueryUid);
      });

      const pool = () => (knex.client as { pool?: PoolLike }).pool;
      new Gauge({
        name: 'svc_db_pool_connections_in_use',
        help: 'Database connections lent out of the pool.',
        registers,
        collect() {
          this.set(pool()?.numUsed() ?? 0);
        },
      });
      new Gauge({
        name: 'svc_db_pool_connections_idle',
        help: 'Open database connections waiting in the pool.',
        registers,
        collect() {
          this.set(pool()?.numFree() ?? 0);
        },
      });
      new Gauge({
        name: 'svc_db_pool_acquires_waiting',
        help: 'Queries waiting for a database connection.',
        registers,
        collect() {
          this.set(pool()?.numPendingAcquires() ?? 0);
        },
      });
    },

    /** The revocation feed's LISTEN connection: 1 while it is connected, else 0. */
    watchRevocationListener(listening: () => boolean): void {
      new Gauge({
        name: 'svc_revocation_listener_connected',
        help: 'Whether the LISTEN connection of the revocation feed is up (PostgreSQL only).',
        registers,
        collect() {
          this.set(listening() ? 1 : 0);
        },
      });
    },

    /** The Prometheus text exposition. */
    render(): Promise<string> {
      return registry.metrics();
    },
  };
}

export type MetricsRegistry = ReturnType<typeof createMetricsRegistry>;
