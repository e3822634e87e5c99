import { describe, expect, test } from '@jest/globals';
import type { ExternalJwtSigner } from '../../repositories/external-jwt-signers-repository.js';
import { createSignerCache } from './signer-cache.js';

const signer = (id: string, enabled = true) => ({ id, enabled }) as ExternalJwtSigner;

/** A loader that counts its reads and serves whatever `rows` holds at the time. */
function fakeLoader(rows: Map<string, ExternalJwtSigner>) {
  const reads: string[] = [];
  return {
    reads,
    load: async (id: string) => {
      reads.push(id);
      return rows.get(id);
    },
  };
}

describe('the in-memory signer cache of the secondary external JWT check', () => {
  test('repeated lookups within the TTL read the database once; after it, once more', async () => {
    const rows = new Map([['s1', signer('s1')]]);
    const loader = fakeLoader(rows);
    let clock = 0;
    const cache = createSignerCache({ load: loader.load, ttlMs: 1000, now: () => clock });

    for (let i = 0; i < 100; i++) expect((await cache.get('s1'))?.id).toBe('s1');
    clock = 999;
    await cache.get('s1');
    const readsWithinTtl = loader.reads.length;
    rows.set('s1', signer('s1', false));
    clock = 1000;
    const after = await cache.get('s1');

    expect(readsWithinTtl).toBe(1);
    expect(loader.reads).toEqual(['s1', 's1']);
    expect(after?.enabled).toBe(false);
  });

  test('concurrent misses share one read, and unknown ids are remembered for the TTL too', async () => {
    const loader = fakeLoader(new Map());
    const cache = createSignerCache({ load: loader.load, now: () => 0 });

    const results = await Promise.all(Array.from({ length: 20 }, () => cache.get('gone')));
    await cache.get('gone');

    expect(results.every((r) => r === undefined)).toBe(true);
    expect(loader.reads).toEqual(['gone']);
  });

  test('invalidate drops an entry so the next lookup reads again', async () => {
    const loader = fakeLoader(new Map([['s1', signer('s1')]]));
    const cache = createSignerCache({ load: loader.load, now: () => 0 });

    await cache.get('s1');
    cache.invalidate('s1');
    await cache.get('s1');
    cache.invalidate();
    await cache.get('s1');

    expect(loader.reads).toEqual(['s1', 's1', 's1']);
  });
});
