import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { createApp, type App, type CreateAppOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config/load-config.js';
import { pgliteDir } from '../../src/db/create-database.js';
import { createHttpsClient, type ClientOptions, type HttpsClient } from './https-client.js';
import { copyMigratedPglite } from './pglite-template.js';
import { createTestDatabaseUrl } from './test-database.js';

export const ADMIN_USERNAME = 'admin';
export const ADMIN_PASSWORD = 'admin-password-1';

export interface TestServer {
  app: App;
  url: string;
  ca: string;
  dataDir: string;
  databaseUrl?: string;
  /** A cookie-less HTTPS client trusting the service CA. */
  client: HttpsClient;
  /** Another client, e.g. presenting a client certificate. */
  newClient(options?: Partial<ClientOptions>, baseUrl?: string): HttpsClient;
  /** A legacy session token for the bootstrap admin. */
  adminToken(): Promise<string>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Environment variables as a user would set them (SVC_*). */
  env?: Record<string, string>;
  /** YAML-shaped settings layered over everything. */
  overrides?: (tree: Record<string, any>) => void;
  /** Reuse a database (a second process on the same PostgreSQL). */
  databaseUrl?: string;
  /** The embedded database in `dataDir` even when TEST_DATABASE_URL is set. */
  embedded?: boolean;
  dataDir?: string;
  /** Where the server logs (default: silent, or TEST_LOG_LEVEL). */
  logger?: Logger;
  /** Webhook delivery's outbound POST, lease or clock. */
  webhooks?: CreateAppOptions['webhooks'];
}

/** The whole controller on an ephemeral port over real HTTPS, with its own database. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  const db = options.databaseUrl || options.embedded ? undefined : await createTestDatabaseUrl();
  const databaseUrl = options.databaseUrl ?? db?.url;
  const config = loadConfig({
    cwd: dataDir,
    env: {
      SVC_DATA_DIR: dataDir,
      SVC_ADDRESS: '127.0.0.1:0',
      SVC_ADMIN_USERNAME: ADMIN_USERNAME,
      SVC_ADMIN_PASSWORD: ADMIN_PASSWORD,
      SVC_MASTER_KEY: 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=',
      SVC_RATE_LIMITS_ENABLED: 'false',
      LOG_LEVEL: 'silent',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...options.env,
    },
    overrides: options.overrides,
  });
  const pglite = pgliteDir(config.dataDir);
  if (!config.databaseUrl && !existsSync(pglite)) await copyMigratedPglite(pglite);
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const app = await createApp(config, { logger, webhooks: options.webhooks });
  const url = app.listeners[0]!.urls.find((u) => u.includes('127.0.0.1')) ?? app.listeners[0]!.urls[0]!;
  const ca = app.pki.caBundlePem;
  const clients: HttpsClient[] = [];
  const newClient = (o: Partial<ClientOptions> = {}, baseUrl = url) => {
    const c = createHttpsClient(baseUrl, { ca, ...o });
    clients.push(c);
    return c;
  };
  const client = newClient();
  return {
    app,
    url,
    ca,
    dataDir,
    databaseUrl,
    client,
    newClient,
    async adminToken() {
      const res = await client.post('/edge/management/v1/authenticate?method=password', {
        body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
      });
      if (res.status !== 200) throw new Error(`admin login failed: ${res.status} ${res.text}`);
      return res.body.data.token as string;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await app.close();
      await db?.drop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
