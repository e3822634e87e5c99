import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { migrationSource } from '../../src/db/migration-source.js';
import { expectError } from '../helpers/expect-error.js';
import type { TestResponse } from '../helpers/https-client.js';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { enrolledUpdbUser, managementApi, MGMT } from '../identities/identity-fixtures.js';

// Read here, not through the module under test: the release is what package.json says.
const RELEASE = (JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { version: string })
  .version;

describe('the running release, told to admins and to no one else', () => {
  let server: TestServer;
  const logLines: { msg?: string; version?: unknown }[] = [];
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) });
    server = await startTestServer({ logger });
  });
  afterAll(() => server.close());

  test('the start-up line names the release', () => {
    expect(RELEASE).toMatch(/^\d+\.\d+\.\d+/);
    expect(logLines.filter((l) => l.msg === 'controller listening')).toEqual([
      expect.objectContaining({ version: RELEASE }),
    ]);
  });

  test('/metrics names the release and the Node.js runtime in svc_build_info', async () => {
    const text = (await server.client.get('/metrics')).text;

    expect(text).toContain('# TYPE svc_build_info gauge');
    expect(text.split('\n').filter((l) => l.startsWith('svc_build_info'))).toEqual([
      `svc_build_info{version="${RELEASE}",node="${process.version}"} 1`,
    ]);
  });

  test("an admin reads the release, the runtime, the database's kind and its newest migration", async () => {
    const admin = managementApi(server, await server.adminToken());
    const known = await migrationSource.getMigrations([]);

    const res = await admin.get('/version');

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        version: RELEASE,
        runtime: process.version,
        database: {
          kind: usingPostgres ? 'postgresql' : 'pglite',
          lastAppliedMigration: known.at(-1),
          compatibilityLevel: '025_compatibility_level',
        },
      },
      meta: {},
    });
  });

  test("the newest migration is the database's, also one this instance does not know", async () => {
    const admin = managementApi(server, await server.adminToken());
    const newer = '999_from_a_newer_release';
    await server.app.knex('knex_migrations').insert({ name: newer, batch: 999, migration_time: new Date() });
    try {
      const res = await admin.get('/version');

      expect(res.body.data.database.lastAppliedMigration).toBe(newer);
      expect(res.body.data.version).toBe(RELEASE);
    } finally {
      await server.app.knex('knex_migrations').where({ name: newer }).delete();
    }
  });

  test('a non-admin identity gets 403, a caller without credentials 401, neither the release', async () => {
    const admin = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, admin, 'version-reader');

    const asUser = await managementApi(server, user.token).get('/version');
    const anonymous = await server.client.get(`${MGMT}/version`);

    expectError(asUser, { status: 403, code: 'FORBIDDEN' });
    expectError(anonymous, { status: 401, code: 'UNAUTHORIZED' });
    for (const res of [asUser, anonymous]) expect(res.text).not.toContain(RELEASE);
  });

  test('no anonymous answer names the release or the runtime, in its body or its headers', async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      server.client.get(path, { headers }).then((res) => ({ path, res }));
    const discovery = await get('/.well-known/openid-configuration');
    const jwks = new URL(discovery.res.body.jwks_uri as string).pathname;

    const answers: { path: string; res: TestResponse }[] = [
      await get('/health/live'),
      await get('/health/ready'),
      await get('/.well-known/est/cacerts'),
      await get('/.well-known/est/cacerts', { accept: 'application/x-pem-file' }),
      discovery,
      await get('/oidc/.well-known/openid-configuration'),
      await get(jwks),
      await get('/edge/client/v1/spec'),
      await get('/edge/management/v1/spec'),
      await get('/edge/client/v1/version'),
      await get(`${MGMT}/version`),
      await get('/version'),
      await get('/account/'),
      await get('/oidc/device'),
    ];

    // Every path answered, so the checks below looked at real bodies.
    expect(answers.filter(({ res }) => res.status >= 500)).toEqual([]);
    expect((await get('/health/ready')).res.body).toEqual({ status: 'ok' });
    const leaks = answers.flatMap(({ path, res }) => {
      const headers = Object.entries(res.headers).map(
        ([name, value]) => `${name}: ${[value].flat().join(', ')}`,
      );
      return [res.text, ...headers]
        .filter(
          (text) =>
            text.includes(RELEASE) || text.includes(process.version) || /^(server|x-powered-by):/i.test(text),
        )
        .map((text) => `${path}: ${text.slice(0, 120)}`);
    });
    expect(leaks).toEqual([]);
  });
});
