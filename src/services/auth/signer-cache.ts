import type { ExternalJwtSigner } from '../../repositories/external-jwt-signers-repository.js';

export interface SignerCacheDeps {
  /** Reads one signer from the database. */
  load: (id: string) => Promise<ExternalJwtSigner | undefined>;
  /**
   * How long an entry is trusted. A change made on one instance is enforced on all within 1
   * second (docs/operations.md), so a disabled or re-keyed signer stops satisfying the secondary factor
   * everywhere within this time, without a notification channel.
   */
  ttlMs?: number;
  now?: () => number;
}

/**
 * External JWT signers by id, in memory: the secondary external JWT is checked on every API
 * request, and a bearer request reads nothing from the database. At most one
 * read per signer per `ttlMs` per process; concurrent misses share one read.
 */
export function createSignerCache({ load, ttlMs = 1000, now = Date.now }: SignerCacheDeps) {
  const entries = new Map<string, { value: ExternalJwtSigner | undefined; at: number }>();
  const loading = new Map<string, Promise<ExternalJwtSigner | undefined>>();

  function fetch(id: string): Promise<ExternalJwtSigner | undefined> {
    let pending = loading.get(id);
    if (!pending) {
      pending = load(id)
        .then((value) => {
          // Unknown ids are remembered too (briefly): a policy may name a signer that is gone.
          entries.set(id, { value, at: now() });
          return value;
        })
        .finally(() => loading.delete(id));
      loading.set(id, pending);
    }
    return pending;
  }

  return {
    get(id: string): Promise<ExternalJwtSigner | undefined> {
      const hit = entries.get(id);
      if (hit && now() - hit.at < ttlMs) return Promise.resolve(hit.value);
      return fetch(id);
    },
    /** Drops one entry (or all): the next `get` reads the database. */
    invalidate(id?: string): void {
      if (id === undefined) entries.clear();
      else entries.delete(id);
    },
  };
}

export type SignerCache = ReturnType<typeof createSignerCache>;
