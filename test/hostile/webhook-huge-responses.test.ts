import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import type { Receiver } from '../webhooks/webhook-receiver.js';
import {
  hostileReceivers,
  keptLog,
  RECEIVER_MARKER,
  storedDeliveryErrors,
  webhookAdmin,
} from './hostile-receivers.js';

const DB = usingPostgres ? 'PostgreSQL' : 'PGlite';
const MiB = 1024 * 1024;
const HUGE = 50 * MiB;
/** Half what a receiver offers: a body read whole would not fit, one read up to 64 KiB does easily. */
const BOUND = HUGE / 2;

/** 64 KiB of the marker, written again and again: the receiver holds no 50 MiB buffer itself. */
const CHUNK = Buffer.alloc(64 * 1024, `${RECEIVER_MARKER}\n`);

/**
 * Writes `HUGE` bytes as fast as the reader takes them, and counts how many it handed out before the
 * reader hung up.
 */
function pour(res: ServerResponse, counted: { sent: number }): void {
  const more = () => {
    while (counted.sent < HUGE && !res.destroyed) {
      counted.sent += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end();
  };
  more();
}

/**
 * How far the memory of Buffers (where a response body read whole would sit) rose above its start,
 * sampled until `stop`.
 */
function bufferMemoryWatch() {
  const start = process.memoryUsage().arrayBuffers;
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 5);
  return {
    stop: () => {
      clearInterval(timer);
      return peak - start;
    },
  };
}

/**
 * Receivers answering 50 MiB, through the real delivery engine: an attempt reads 64 KiB and hangs
 * up, records the status, and keeps none of the receiver's bytes in what it stores.
 */
describe(`webhook receivers answering huge responses (${DB})`, () => {
  let receivers: Awaited<ReturnType<typeof hostileReceivers>>;
  let receiver: Receiver;
  let server: TestServer;
  const log = keptLog();
  const poured: Record<string, { sent: number }> = {};

  beforeAll(async () => {
    receivers = await hostileReceivers();
    receiver = await receivers.start((req, res) => {
      const name = (req.url ?? '').slice(1);
      const counted = (poured[name] ??= { sent: 0 });
      if (name === 'huge-200') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(HUGE) });
        pour(res, counted);
      } else if (name === 'huge-500-chunked') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        pour(res, counted);
      } else if (name === 'header-flood') {
        // 1 MiB of one header: far over what an HTTP client reads as a response head.
        res.writeHead(200, { 'x-flood': RECEIVER_MARKER.repeat(MiB / RECEIVER_MARKER.length) }).end('ok');
      } else res.writeHead(404).end();
    });
    server = await startTestServer({ env: receivers.privateTargetsEnv, logger: log.logger });
  });
  afterAll(async () => {
    await server?.close();
    await receivers?.close();
  });

  test('50 MiB answers are cut at 64 KiB, their status recorded, and the process never holds them', async () => {
    const admin = await webhookAdmin(server);
    const ids = {
      ok: await admin.create('huge-200', receiver.url('/huge-200')),
      failing: await admin.create('huge-500', receiver.url('/huge-500-chunked')),
      flood: await admin.create('header-flood', receiver.url('/header-flood')),
    };
    const memory = bufferMemoryWatch();
    await admin.event('answered-hugely');
    const ok = await admin.attempted(ids.ok);
    const failing = await admin.attempted(ids.failing);
    const flood = await admin.attempted(ids.flood);
    const grew = memory.stop();
    console.log(
      `huge responses (${DB}): receiver handed out ${JSON.stringify(poured)} bytes;` +
        ` Buffer memory peak +${(grew / MiB).toFixed(1)} MiB`,
    );

    expect(ok).toMatchObject({ status: 'succeeded', lastStatusCode: 200, lastError: null });
    expect(failing).toMatchObject({
      status: 'pending',
      lastStatusCode: 500,
      lastError: 'the receiver answered 500',
    });
    expect(flood).toMatchObject({
      status: 'pending',
      lastStatusCode: null,
      lastError: 'invalid HTTP response',
    });
    // Hung up on long before the end: neither body was read to its end.
    expect(receiver.connections()).toBeGreaterThanOrEqual(3);
    expect(poured['huge-200']!.sent).toBeLessThan(BOUND);
    expect(poured['huge-500-chunked']!.sent).toBeLessThan(BOUND);
    expect(grew).toBeLessThan(BOUND);

    for (const id of Object.values(ids)) {
      expect((await admin.deliveries(id)).text).not.toContain(RECEIVER_MARKER);
    }
    const errors = await storedDeliveryErrors(server);
    expect(errors.filter((e) => e.includes(RECEIVER_MARKER) || e.length > 500)).toEqual([]);
    // Nor the log, down to debug (which holds a line per request).
    expect(log.text()).toContain('"requestId"');
    expect(log.text()).not.toContain(RECEIVER_MARKER);
    // The server still answers.
    expect((await server.client.get('/health/ready')).status).toBe(200);
  });
});
