import Router from '@koa/router';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from './config/load-config.js';
import type { ListenerSpec } from './config/web-listeners.js';
import { databaseFor, type Database } from './db/create-database.js';
import { migrateToLatest } from './db/migrate.js';
import { lockDataDir } from './db/data-dir-lock.js';
import { preparePrivateDataDir, tightenTree } from './db/private-data-dir.js';
import { resolveMasterKey } from './crypto/master-key.js';
import { createSecretBox } from './crypto/secret-box.js';
import { createLogger } from './logger.js';
import { verifyMasterKey, verifyMasterKeyBeforeMigrating } from './services/master-key-check.js';
import { ensurePki, type PkiMaterial } from './services/pki-service.js';
import { ensureFirstAdmin, type BootstrapResult } from './services/admin-bootstrap.js';
import { countCertificatesNowRefused } from './services/count-certificates-now-refused.js';
import { compose, type Services } from './compose.js';
import { buildKoaApp } from './listeners/build-koa-app.js';
import { corsOriginMatcher, redirectPatternsFor } from './config/uri-patterns.js';
import { cipherString } from './config/tls-ciphers.js';
import { listenHttps, splitHostPort, withBoundPort, type BoundServer } from './listeners/https-listeners.js';
import { createRequestSwitch, type RequestSwitch } from './listeners/request-switch.js';
import { unavailableApp } from './listeners/unavailable-app.js';
import { createResponseDeadline } from './listeners/response-deadline.js';
import { closeGracefully, type GracefulCloseOptions, type ServedServer } from './listeners/graceful-close.js';
import { healthRoutes } from './routes/health-routes.js';
import { wellKnownRoutes } from './routes/well-known-routes.js';
import { metricsRoutes } from './routes/metrics-routes.js';
import { createMetricsRegistry } from './services/metrics-registry.js';
import type { WebhookOverrides } from './services/webhooks/webhook-dispatcher.js';
import { controllerVersion } from './version.js';

export interface RunningListener {
  name: string;
  /** The configured listener with each address's port as bound (`localhost:0` resolved). */
  spec: ListenerSpec;
  /** `https://host:port` per advertised address. */
  urls: string[];
  servers: BoundServer[];
}

export interface App {
  config: Config;
  knex: Knex;
  database: Database;
  pki: PkiMaterial;
  services: Services;
  listeners: RunningListener[];
  admin: BootstrapResult;
  logger: Logger;
  /** Stops at once: in-flight requests get up to 10 s, idle connections are closed (tests). */
  close(): Promise<void>;
  /**
   * SIGTERM: refuses new connections, answers every request already received (503 with
   * `Connection: close` for those that arrive on open connections) and resolves within
   * `server.shutdownGracePeriod`, leaving a second of it for closing the database.
   */
  shutdown(): Promise<void>;
}

/** What shutdown leaves of its grace period for stopping the services and the pool. */
const CLEANUP_RESERVE_MS = 1000;

type CloseMode = Pick<GracefulCloseOptions, 'keepIdleConnections' | 'graceMs'>;

/** Runs every step, each after the one before, even when one fails; rethrows the first failure. */
async function inOrder(steps: (() => unknown)[]): Promise<void> {
  let failed: { err: unknown } | undefined;
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failed ??= { err };
    }
  }
  if (failed) throw failed.err;
}

function certificateHosts(config: Config): string[] {
  const hosts = config.listeners.flatMap((l) => l.addresses.map((a) => splitHostPort(a).host));
  return [...hosts, 'localhost', '127.0.0.1'];
}

export interface CreateAppOptions {
  logger?: Logger;
  /**
   * Called as soon as a first admin with a generated password is committed, before anything that
   * could still fail: a start that fails later must not take the only copy of the password with it.
   */
  onGeneratedAdminPassword?: (admin: BootstrapResult) => void;
  /** Webhook delivery's parts that tests replace. */
  webhooks?: WebhookOverrides;
}

/** A start-up step: enrolled client certificates the chain rules now refuse are worth a warning. */
async function warnOfRefusedCertificates(knex: Knex, logger: Logger): Promise<void> {
  const refused = await countCertificatesNowRefused(knex, new Date());
  if (refused === 0) return;
  logger.warn(
    { certificates: refused },
    `${refused} enrolled client certificate(s) can no longer log in: their extendedKeyUsage ` +
      'lacks clientAuth or their CA certificate is expired (docs/operations.md "Client certificates")',
  );
}

/** Composition root: config in, a running controller out (docs/architecture.md). */
export async function createApp(config: Config, options: CreateAppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logLevel);
  for (const warning of config.warnings) logger.warn(warning);
  const tightened = preparePrivateDataDir(config.dataDir);
  if (tightened.length > 0) {
    logger.warn(
      { dataDir: config.dataDir, tightened: tightened.length },
      'the data directory was readable by other users; tightened it to 0700 (files 0600)',
    );
  }
  const unlock = config.databaseUrl ? () => undefined : lockDataDir(config.dataDir);
  const database = databaseFor(config);
  const { knex } = database;
  const metrics = createMetricsRegistry();
  metrics.watchDatabase(knex);
  let closeServers: ((mode: CloseMode) => Promise<void>) | undefined;
  let services: Services | undefined;
  /**
   * Stops what has started, in this order: the servers first (requests in flight still use the
   * services, and a service slow to stop, such as a LISTEN connection to a database that does not
   * answer, must not keep the ports accepting), then the services, the pool, and only then the
   * data-directory lock. PGlite's files are tightened again once it has closed them: it creates
   * some readable by all.
   */
  const stopAll = (mode: CloseMode) =>
    inOrder([
      () => closeServers?.(mode),
      () => services?.stop(),
      () => knex.destroy(),
      () => void tightenTree(config.dataDir),
      unlock,
    ]);
  try {
    const { key, generated } = resolveMasterKey(config.masterKey, config.dataDir);
    if (generated)
      logger.warn('generated a master key in the data directory; set SVC_MASTER_KEY to share it');
    const box = createSecretBox(key);
    await verifyMasterKeyBeforeMigrating(knex, box);
    const applied = await migrateToLatest(database);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    // The embedded database is open now: what PGlite unpacked or created 0666 becomes 0600.
    if (database.kind === 'pglite') tightenTree(config.dataDir);
    await verifyMasterKey(knex, box);
    const pki = await ensurePki({
      knex,
      box,
      hosts: certificateHosts(config),
      dataDir: config.dataDir,
      tls: config.tls,
      pki: config.pki,
    });
    const admin = await ensureFirstAdmin(knex, config.admin.username, config.admin.password);
    if (admin.generatedPassword) options.onGeneratedAdminPassword?.(admin);

    // From the moment a port is bound every request gets an answer: 503 "starting" until the
    // application is swapped in below, 503 "stopping" once shutdown has begun.
    const deadline = createResponseDeadline(config.server.responseDeadline);
    const served: ServedServer[] = [];
    const serving = { now: false };
    closeServers = (mode) => {
      serving.now = false;
      return closeGracefully({ servers: served, expirePending: deadline.expireAll, logger, ...mode });
    };
    const frameOf = (spec: ListenerSpec) => ({
      logger,
      metrics,
      corsOriginAllowed: corsOriginMatcher(redirectPatternsFor(config, spec), config.corsOrigins),
    });
    // One request switch per listener, shared by its servers: the application is swapped in per
    // listener. The configuration stays as loaded: the resolved addresses travel in new specs.
    const listeners: (RunningListener & { requests: RequestSwitch })[] = [];
    for (const configured of config.listeners) {
      const frame = frameOf(configured);
      const requests = createRequestSwitch({
        starting: unavailableApp('starting', configured, frame).callback(),
        stopping: unavailableApp('stopping', configured, frame).callback(),
      });
      const servers: BoundServer[] = [];
      for (const iface of configured.interfaces) {
        const server = await listenHttps(iface, pki, {
          onRequest: requests.handle,
          handshakeTimeoutMs: config.server.tlsHandshakeTimeout * 1000,
          ciphers: cipherString(config.tls.ciphers),
          responseDeadlineMs: config.server.responseDeadline * 1000,
          proxyProtocol: configured.proxyProtocol && { ...configured.proxyProtocol, logger },
        });
        served.push({ server: server.server, requests });
        servers.push(server);
      }
      const addresses = configured.addresses.map((a) => withBoundPort(a, servers));
      const spec = { ...configured, addresses };
      listeners.push({
        name: spec.name,
        spec,
        urls: addresses.map((a) => `https://${a}`),
        servers,
        requests,
      });
    }
    logger.info(
      { interfaces: listeners.flatMap((l) => l.servers.map((s) => `${s.requested} (${s.port})`)) },
      'listeners bound; answering 503 until started',
    );

    await warnOfRefusedCertificates(knex, logger);
    services = await compose({
      config,
      listeners: listeners.map((l) => l.spec),
      database,
      box,
      pki,
      logger,
      metrics,
      webhooks: options.webhooks,
    });
    const notReady = () => {
      if (!serving.now) return 'the listeners do not serve the application';
      if (services?.oidc && !services.oidc.keysLoaded()) return 'the signing keys are not loaded';
      return undefined;
    };
    const common: Router[] = [healthRoutes(knex, notReady), wellKnownRoutes(pki)];
    const metricsEndpoint = metricsRoutes(metrics);
    for (const { spec, requests } of listeners) {
      const app = buildKoaApp(
        spec,
        { common, ...services.routers, metricsEndpoint },
        { ...frameOf(spec), responseDeadline: deadline.middleware },
      );
      requests.serve(app.callback());
    }
    serving.now = true;
    logger.info(
      { version: controllerVersion, listeners: listeners.map((l) => ({ name: l.name, urls: l.urls })) },
      'controller listening',
    );

    let closing: Promise<void> | undefined;
    const close = () => (closing ??= stopAll({ keepIdleConnections: false, graceMs: 10_000 }));
    const shutdown = () =>
      (closing ??= stopAll({
        keepIdleConnections: true,
        graceMs: Math.max(500, config.server.shutdownGracePeriod * 1000 - CLEANUP_RESERVE_MS),
      }));
    return {
      config,
      knex,
      database,
      pki,
      services,
      listeners: listeners.map(({ requests: _, ...running }) => running),
      admin,
      logger,
      close,
      shutdown,
    };
  } catch (err) {
    await stopAll({ keepIdleConnections: false, graceMs: 10_000 }).catch(() => undefined);
    throw err;
  }
}
