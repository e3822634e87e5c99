import type { Logger } from 'pino';
import { outsideRequestScope } from '../request-scope.js';
import type { KeySet } from './key-service.js';

export interface KeyWatcherDeps {
  load: () => Promise<KeySet>;
  /** Called with every new key set (the first one included); must swap state atomically. */
  onChange: (keys: KeySet) => void | Promise<void>;
  logger: Logger;
  pollMs?: number;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * oidc-provider reads keys only when a Provider is built, so every process polls the
 * key table and rebuilds when the set changes — and wakes up exactly when a key starts signing.
 */
export function createKeyWatcher({ load, onChange, logger, pollMs = 3000 }: KeyWatcherDeps) {
  let current: KeySet | undefined;
  let chain: Promise<void> = Promise.resolve();
  let poller: NodeJS.Timeout | undefined;
  let wake: NodeJS.Timeout | undefined;
  let stopped = false;

  function schedule(at: Date | undefined) {
    if (wake) clearTimeout(wake);
    wake = undefined;
    if (!at || stopped) return;
    const delay = Math.min(MAX_TIMEOUT_MS, Math.max(0, at.getTime() - Date.now()) + 20);
    wake = setTimeout(() => void refresh().catch(() => undefined), delay);
    wake.unref();
  }

  async function check(): Promise<void> {
    const keys = await load();
    if (keys.version !== current?.version) {
      await onChange(keys);
      current = keys;
    }
    schedule(keys.nextChangeAt);
  }

  /**
   * Serialised: one reload at a time, in order. A request may ask for one (keys rotate): the
   * reload and the wake timer it sets belong to no request, so they run outside the request scope;
   * otherwise the timer would hold that request (its Koa ctx) until the next key change, and
   * anything recorded on the way would be attributed to the caller.
   */
  function refresh(): Promise<void> {
    return outsideRequestScope(() => {
      chain = chain.then(check, check);
      return chain.catch((err: unknown) => {
        logger.warn({ err }, 'signing key reload failed');
        throw err;
      });
    });
  }

  return {
    current: () => current,
    refresh,
    async start(): Promise<void> {
      await refresh();
      poller = setInterval(() => void refresh().catch(() => undefined), pollMs);
      poller.unref();
    },
    stop(): void {
      stopped = true;
      if (poller) clearInterval(poller);
      if (wake) clearTimeout(wake);
    },
  };
}

export type KeyWatcher = ReturnType<typeof createKeyWatcher>;
