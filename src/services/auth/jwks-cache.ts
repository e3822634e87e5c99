import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose';

export interface JwksCacheOptions {
  /** A JWKS endpoint gets 5 s to answer: a slow IdP must not hold logins. */
  timeoutMs?: number;
  /**
   * An unknown `kid` refetches the set, at most this often (once a second: a forged `kid` cannot make us
   * hammer the IdP).
   */
  cooldownMs?: number;
  /** Keys are refetched when older than this even if every kid is known (rotation by the IdP). */
  maxAgeMs?: number;
  fetch?: typeof fetch;
}

// A key set is a few KiB; the bound keeps a hostile or broken endpoint from filling our memory.
const MAX_JWKS_BYTES = 1024 * 1024;
// Signers are few; the bound only stops a stream of changed endpoints from growing the map forever.
const MAX_ENDPOINTS = 256;

/** Reads at most MAX_JWKS_BYTES of the body; jose then parses it as JSON. */
function limitedFetch(fetchImpl: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    const reader = response.body?.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const next = await reader?.read();
      if (!next || next.done) break;
      size += next.value.byteLength;
      if (size > MAX_JWKS_BYTES) {
        await reader?.cancel();
        throw new Error('the JSON Web Key Set response is larger than 1 MiB');
      }
      chunks.push(next.value);
    }
    return new Response(Buffer.concat(chunks), { status: response.status, headers: response.headers });
  };
}

/**
 * JWKS of external JWT signers, one cached key set per endpoint: fetched with a
 * timeout through our own fetch (https with the system CAs, or http), kept for `maxAgeMs`, and
 * refetched on an unknown `kid` no more than once per `cooldownMs`. Redirects are not followed.
 */
export function createJwksCache(options: JwksCacheOptions = {}) {
  const sets = new Map<string, JWTVerifyGetKey>();
  const fetchImpl = limitedFetch(options.fetch ?? fetch);

  return {
    /** The key resolver for `jwtVerify` of the set at `url`. */
    keysFor(url: string): JWTVerifyGetKey {
      let set = sets.get(url);
      if (!set) {
        set = createRemoteJWKSet(new URL(url), {
          timeoutDuration: options.timeoutMs ?? 5000,
          cooldownDuration: options.cooldownMs ?? 1000,
          cacheMaxAge: options.maxAgeMs ?? 10 * 60_000,
          [customFetch]: fetchImpl,
        });
        if (sets.size >= MAX_ENDPOINTS) sets.delete(sets.keys().next().value!);
        sets.set(url, set);
      }
      return set;
    },
  };
}

export type JwksCache = ReturnType<typeof createJwksCache>;
