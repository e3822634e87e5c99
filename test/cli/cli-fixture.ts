import { expect } from '@jest/globals';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  startTestServer,
  type TestServer,
  type TestServerOptions,
} from '../helpers/test-server.js';
import type { TestResponse } from '../helpers/https-client.js';
import { runSvc, type SvcResult } from './run-svc.js';

export const MGMT = '/edge/management/v1';
export const mode = (path: string) => statSync(path).mode & 0o777;
/** The CLI's failure contract: exactly one line on stderr. */
export const oneLine = (text: string) => text.endsWith('\n') && text.trim().split('\n').length === 1;

export interface CliFixture {
  server: TestServer;
  /** HOME of the spawned CLI; its session lives under `<home>/config/svc`. */
  home: string;
  /** `<data dir>/pki/ca.pem`, as an operator would pass it to `svc login --ca`. */
  caFile: string;
  admin: { 'svc-session': string };
  svc(
    args: string[],
    o?: { input?: string; home?: string; env?: Record<string, string> },
  ): Promise<SvcResult>;
  api: { get(path: string): Promise<TestResponse>; post(path: string, body: unknown): Promise<TestResponse> };
  /** The identity detail of the one identity with that name. */
  detailByName(name: string): Promise<any>;
  close(): Promise<void>;
}

/** A real server, a temp HOME, and the CLI logged in there as the admin (`svc login --ca`). */
export async function startCliFixture(options: TestServerOptions = {}): Promise<CliFixture> {
  const server = await startTestServer(options);
  const home = mkdtempSync(join(tmpdir(), 'svc-cli-home-'));
  const caFile = join(server.dataDir, 'pki', 'ca.pem');
  const admin = { 'svc-session': await server.adminToken() };
  const svc: CliFixture['svc'] = (args, o = {}) =>
    runSvc(args, { home: o.home ?? home, input: o.input, env: o.env });
  const api = {
    get: (path: string) => server.client.get(`${MGMT}${path}`, { headers: admin }),
    post: (path: string, body: unknown) => server.client.post(`${MGMT}${path}`, { headers: admin, body }),
  };
  const detailByName = async (name: string) => {
    const res = await api.get(`/identities?filter=${encodeURIComponent(`name = "${name}"`)}`);
    expect(res.body.data).toHaveLength(1);
    return (await api.get(`/identities/${res.body.data[0].id}`)).body.data;
  };
  const login = await svc(['login', server.url, '-u', ADMIN_USERNAME, '-p', ADMIN_PASSWORD, '--ca', caFile]);
  expect(login).toMatchObject({ code: 0, stderr: '' });
  return {
    server,
    home,
    caFile,
    admin,
    svc,
    api,
    detailByName,
    async close() {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
