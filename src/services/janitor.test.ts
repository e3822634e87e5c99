import { describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import type { InstanceLock } from '../db/instance-lock.js';
import { JANITOR_BATCH, drainExpired, runJanitor } from './janitor.js';

const freeLock: InstanceLock = {
  tryAcquire: async () => ({ held: true, release: async () => undefined }),
  acquire: async () => ({ held: true, release: async () => undefined }),
};
const quiet = pino({ level: 'silent' });
const tick = () => new Promise((r) => setTimeout(r, 5));

describe('stopping the janitor', () => {
  test('stop waits for the pass in progress, which ends after its current batch', async () => {
    let batches = 0;
    let releaseBatch: () => void = () => undefined;
    const deleteBatch = async () => {
      batches++;
      await new Promise<void>((r) => (releaseBatch = r));
      return JANITOR_BATCH; // always a full batch: only the stop ends this pass
    };
    const stop = runJanitor((signal) => drainExpired(deleteBatch, signal), freeLock, quiet, 'rows', 10);
    while (batches === 0) await tick();

    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await tick();
    expect(stopped).toBe(false); // the batch under way still holds the pool

    releaseBatch();
    await stopping;
    expect(batches).toBe(1); // no batch after the stop
  });

  test('a stop between passes resolves at once and no pass starts afterwards', async () => {
    let passes = 0;
    const stop = runJanitor(async () => void passes++, freeLock, quiet, 'rows', 10);
    while (passes === 0) await tick();
    await stop();
    const after = passes;
    await new Promise((r) => setTimeout(r, 50));
    expect(passes).toBe(after);
  });
});
