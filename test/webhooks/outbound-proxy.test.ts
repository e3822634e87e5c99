import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createOutboundPost } from '../../src/services/webhooks/outbound-post.js';
import {
  receiverPki,
  startReceiver,
  startTcpRecorder,
  type Receiver,
  type TcpRecorder,
} from './webhook-receiver.js';

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy'];

let caPem: string;
let receiver: Receiver;
let proxy: TcpRecorder;

beforeAll(async () => {
  const pki = await receiverPki();
  caPem = pki.ca.certPem;
  receiver = await startReceiver(pki.leaf);
  // Records any connection: a proxy that must never be asked.
  proxy = await startTcpRecorder((socket) => socket.destroy());
});

afterAll(async () => {
  await receiver.close();
  await proxy.close();
});

describe('proxy variables are ignored', () => {
  test('set in this process: the delivery goes straight to the receiver', async () => {
    const saved = Object.fromEntries(PROXY_VARIABLES.map((name) => [name, process.env[name]]));
    for (const name of PROXY_VARIABLES) process.env[name] = `http://127.0.0.1:${proxy.port}`;
    process.env.NO_PROXY = '';
    try {
      const post = createOutboundPost({ allowPrivateTargets: true, extraCa: caPem });
      const response = await post(receiver.url(), '{}', {});
      expect(response.status).toBe(204);
      expect(proxy.connections()).toBe(0);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      delete process.env.NO_PROXY;
    }
  });

  test('with NODE_USE_ENV_PROXY=1 at start: the global agent uses the proxy, the delivery does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-webhook-proxy-'));
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, caPem);
    const env = {
      PATH: process.env.PATH ?? '',
      NODE_USE_ENV_PROXY: '1',
      HTTPS_PROXY: `http://127.0.0.1:${proxy.port}`,
      https_proxy: `http://127.0.0.1:${proxy.port}`,
    };
    const run = async (mode: string) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', join(import.meta.dirname, 'post-once.ts'), mode, receiver.url(), caFile],
        { env },
      );
      return stdout.trim();
    };
    // The control: Node's global agent in that process does go through the proxy (which hangs up).
    const before = proxy.connections();
    expect(await run('global')).toMatch(/^error /);
    expect(proxy.connections()).toBe(before + 1);
    const hits = receiver.hits.length;
    expect(await run('outbound')).toBe('status 204');
    expect(proxy.connections()).toBe(before + 1);
    expect(receiver.hits.length).toBe(hits + 1);
  });
});
