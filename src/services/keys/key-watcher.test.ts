import { describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { currentRequestScope, runInRequestScope, type RequestScope } from '../request-scope.js';
import type { KeySet } from './key-service.js';
import { createKeyWatcher } from './key-watcher.js';

const keySet = (version: string, nextChangeAt?: Date): KeySet => ({
  privateJwks: [],
  publicJwks: [],
  signingKid: version,
  version,
  nextChangeAt,
});

describe('key watcher', () => {
  test('a reload asked for by a request, and the wake timer it sets, run outside that request scope', async () => {
    const seen: { version: string; scope: RequestScope | undefined }[] = [];
    let next = keySet('v1');
    const watcher = createKeyWatcher({
      load: async () => next,
      onChange: (keys) => void seen.push({ version: keys.version, scope: currentRequestScope() }),
      logger: pino({ level: 'silent' }),
      pollMs: 3_600_000,
    });
    await watcher.start();
    try {
      // The rotate request: the new key starts signing shortly, so the reload sets a wake timer.
      next = keySet('v2', new Date(Date.now() + 50));
      const scope: RequestScope = {
        requestId: 'req-rotate',
        sourceAddress: () => '192.0.2.1',
        actorId: 'admin',
      };
      await runInRequestScope(scope, async () => {
        await watcher.refresh();
        // The caller keeps its own scope after the reload.
        expect(currentRequestScope()).toBe(scope);
        next = keySet('v3');
      });
      await waitFor(() => seen.find((s) => s.version === 'v3'), { what: 'the reload of the wake timer' });

      expect(seen.map((s) => s.version)).toEqual(['v1', 'v2', 'v3']);
      expect(seen.map((s) => s.scope)).toEqual([undefined, undefined, undefined]);
    } finally {
      watcher.stop();
    }
  });
});
