import type { Knex } from 'knex';
import { identitiesRepository } from '../repositories/identities-repository.js';
import type { IdentityFacts } from './identity-view.js';

/** What a bearer request needs of its identity beyond the token's own claims. */
export interface IdentityContext {
  id: string;
  name: string;
  /** The policy's `secondary.requireExtJwt`: a JWT of this signer must come with every request. */
  requireExtJwtSigner: string | null;
  /** The secondary external JWT must name this identity. */
  externalId?: string | null;
}

/**
 * The cached entry: the bearer facts plus the identity's standing, which a legacy `svc-session`
 * request checks itself (its token carries no generation), and its permissions, which no token
 * carries. Disabling, enabling, deleting, an isAdmin change and a permissions change each publish
 * an identity event, which drops the entry on every instance.
 */
export interface CachedIdentity extends IdentityContext {
  isAdmin: boolean;
  /** Checked on each use (token introspection): removing one takes effect with the next event. */
  permissions: string[];
  disabled: boolean;
  disabledUntil: Date | null;
}

export interface IdentityContextDeps {
  knex: Knex;
  /** A safety net only: revocation events invalidate entries at once. */
  ttlMs?: number;
  now?: () => number;
  /**
   * Reads what the identity detail is made of (`current-identity`); kept and dropped like the
   * cached entries.
   */
  loadDetail?: (id: string) => Promise<IdentityFacts | undefined>;
  /**
   * Most identities kept at once (each of the two kinds of entry): beyond it the entry loaded
   * longest ago leaves, so memory stays bounded however many identities call.
   */
  maxEntries?: number;
}

/**
 * What bearer and legacy `svc-session` requests need of an identity (`CachedIdentity`; the identity
 * detail, type `IdentityFacts`, is kept beside it), read once per identity and kept in memory (a
 * bearer request reads nothing from the database; docs/architecture.md). Every change that matters
 * to a token — deletion, disabling, isAdmin, the policy or its secondary block — records an
 * identity revocation, which drops the entry here (`invalidate`) and refuses the older tokens
 * anyway; a rename records a facts-only event, which drops the entry and refuses nothing. The
 * identity detail shown to the identity itself is kept the same way: every write to the identity,
 * its role attributes, authenticators, enrollments or TOTP publishes such an event.
 */
export function createIdentityContextCache({
  knex,
  ttlMs = 300_000,
  now = Date.now,
  loadDetail,
  maxEntries = 20_000,
}: IdentityContextDeps) {
  /** `map.set`, then the oldest entries dropped beyond maxEntries (a Map iterates in insertion order). */
  function setBounded<V>(map: Map<string, V>, id: string, value: V): void {
    map.delete(id);
    map.set(id, value);
    while (map.size > maxEntries) map.delete(map.keys().next().value!);
  }

  const entries = new Map<string, { value: CachedIdentity; at: number }>();
  const loading = new Map<string, Promise<CachedIdentity | undefined>>();
  const details = new Map<string, { value: IdentityFacts; at: number }>();
  const loadingDetails = new Map<string, Promise<IdentityFacts | undefined>>();
  // Bumped by every `invalidate`: a load that started before one is not kept, whichever identity
  // it named (invalidations are rare; a load not kept is only read again next time).
  let generation = 0;

  async function loadDetailOf(id: string): Promise<IdentityFacts | undefined> {
    if (!loadDetail) throw new Error('identity details are not loaded by this cache');
    const started = generation;
    const value = await loadDetail(id);
    if (value && generation === started) setBounded(details, id, { value, at: now() });
    return value;
  }

  async function load(id: string): Promise<CachedIdentity | undefined> {
    const started = generation;
    const found = await identitiesRepository.findWithPolicy(knex, id);
    if (!found) return undefined;
    const { identity, policy } = found;
    const value: CachedIdentity = {
      id,
      name: identity.name,
      requireExtJwtSigner: policy.secondary.requireExtJwt ?? null,
      externalId: identity.externalId,
      isAdmin: identity.isAdmin,
      permissions: identity.permissions,
      disabled: identity.disabled,
      disabledUntil: identity.disabledUntil,
    };
    if (generation === started) setBounded(entries, id, { value, at: now() });
    return value;
  }

  /** One load per identity at a time; the entry is removed only by the load that put it there. */
  function once<T>(pending: Map<string, Promise<T>>, id: string, run: () => Promise<T>): Promise<T> {
    let p = pending.get(id);
    if (!p) {
      const started: Promise<T> = run().finally(() => {
        if (pending.get(id) === started) pending.delete(id);
      });
      pending.set(id, (p = started));
    }
    return p;
  }

  return {
    async get(id: string): Promise<CachedIdentity | undefined> {
      const hit = entries.get(id);
      if (hit && now() - hit.at < ttlMs) return hit.value;
      return once(loading, id, () => load(id));
    },
    /**
     * The facts of the identity detail. Reread once the latest API session known at reading time has
     * ended: a session started since would otherwise not show.
     */
    async detail(id: string): Promise<IdentityFacts | undefined> {
      const hit = details.get(id);
      const t = now();
      if (hit && t - hit.at < ttlMs && hit.value.sessionsUntil > t) return hit.value;
      return once(loadingDetails, id, () => loadDetailOf(id));
    },
    invalidate(id: string): void {
      entries.delete(id);
      loading.delete(id);
      details.delete(id);
      loadingDetails.delete(id);
      generation++;
    },
  };
}

export type IdentityContextCache = ReturnType<typeof createIdentityContextCache>;
