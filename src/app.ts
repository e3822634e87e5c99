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
import { verifyMasterKey } from './services/master-key-check.js';
import { ensurePki, type PkiMaterial } from './services/pki-service.js';
import { ensureFirstAdmin, type BootstrapResult } from './services/admin-bootstrap.js';
import { compose, type Services } from './compose.js';
import { buildKoaApp } from './listeners/build-koa-app.js';
import { corsOriginMatcher, redirectPatternsFor } from './config/uri-patterns.js';
import {
  closeServer,
  listenHttps,
  splitHostPort,
  withBoundPort,
  type BoundServer,
} from './listeners/https-listeners.js';
import { healthRoutes } from './routes/health-routes.js';
import { wellKnownRoutes } from './routes/well-known-routes.js';
import { metricsRoutes } from './routes/metrics-routes.js';
import { createMetricsRegistry } from './services/metrics-registry.js';

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
  close(): Promise<void>;
}

function certificateHosts(config: Config): string[] {
  const hosts = config.listeners.flatMap((l) => l.addresses.map((a) => splitHostPort(a).host));
  return [...hosts, 'localhost', '127.0.0.1'];
}

/** Composition root: config in, a running controller out (docs/architecture.md). */
export async function createApp(config: Config, options: { logger?: Logger } = {}): Promise<App> {
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
  const metricsRecorder = createMetricsRegistry();
  metricsRecorder.watchDatabase(knex);
  // Run in order: servers, services, the pool, and only then the data-directory lock.
  // PGlite's files are tightened again once it has closed them: it creates some readable by all.
  const cleanups: (() => Promise<void> | void)[] = [
    () => knex.destroy(),
    () => void tightenTree(config.dataDir),
    unlock,
  ];
  try {
    const applied = await migrateToLatest(database);
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
    // The embedded database is open now: what PGlite unpacked or created 0666 becomes 0600.
    if (database.kind === 'pglite') tightenTree(config.dataDir);
    const { key, generated } = resolveMasterKey(config.masterKey, config.dataDir);
    if (generated)
      logger.warn('generated a master key in the data directory; set SVC_MASTER_KEY to share it');
    const box = createSecretBox(key);
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

    const bound = new Map<string, BoundServer>();
    for (const iface of new Set(config.listeners.flatMap((l) => l.interfaces))) {
      const proxied = config.listeners.find((l) => l.interfaces.includes(iface))?.proxyProtocol;
      const server = await listenHttps(iface, pki, proxied && { ...proxied, logger });
      cleanups.unshift(() => closeServer(server.server));
      bound.set(iface, server);
    }
    // The configuration stays as loaded: the resolved addresses travel in new listener specs.
    const listeners: RunningListener[] = config.listeners.map((configured) => {
      const servers = configured.interfaces.map((i) => bound.get(i)!);
      const spec = { ...configured, addresses: configured.addresses.map((a) => withBoundPort(a, servers)) };
      return { name: spec.name, spec, urls: spec.addresses.map((a) => `https://${a}`), servers };
    });

    const services = await compose({
      config,
      listeners: listeners.map((l) => l.spec),
      database,
      box,
      pki,
      logger,
      metrics: metricsRecorder,
    });
    cleanups.unshift(() => services.stop());
    const common: Router[] = [healthRoutes(knex), wellKnownRoutes(pki)];
    const metrics = metricsRoutes(metricsRecorder);
    for (const { spec, servers } of listeners) {
      const app = buildKoaApp(
        spec,
        { common, ...services.routers, metrics, metricsRecorder },
        logger,
        corsOriginMatcher(redirectPatternsFor(config, spec), config.corsOrigins),
      );
      const handler = app.callback();
      for (const s of servers) s.server.on('request', handler);
    }
    logger.info(
      { listeners: listeners.map((l) => ({ name: l.name, urls: l.urls })) },
      'controller listening',
    );

    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        for (const cleanup of cleanups) await cleanup();
      })());
    return { config, knex, database, pki, services, listeners, admin, logger, close };
  } catch (err) {
    for (const cleanup of cleanups) await Promise.resolve(cleanup()).catch(() => undefined);
    throw err;
  }
}
