import type { Adapter, AdapterPayload } from 'oidc-provider';

interface Entry {
  payload: AdapterPayload;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 30_000;

/**
 * The cheapest storage oidc-provider can have, for baseline (b): one Map per model, no LRU.
 * (The library's own memory adapter keeps only 1,000 entries, and a login writes about seven,
 * so a refresh-token chain could be evicted in the middle of a run.) A consumed entry stays
 * until it expires, so replay detection works as with a database.
 */
export function createMemoryAdapterClass() {
  const models = new Map<string, Map<string, Entry>>();
  const grants = new Map<string, Set<{ model: string; id: string }>>();
  const sessionIdByUid = new Map<string, string>();
  const now = () => Date.now();
  const sweep = setInterval(() => {
    const t = now();
    for (const entries of models.values())
      for (const [id, entry] of entries) if (entry.expiresAt <= t) entries.delete(id);
    for (const [grantId, members] of grants)
      for (const m of members) {
        if (!models.get(m.model)?.has(m.id)) members.delete(m);
        if (members.size === 0) grants.delete(grantId);
      }
    const sessions = models.get('Session');
    for (const [uid, id] of sessionIdByUid) if (!sessions?.has(id)) sessionIdByUid.delete(uid);
  }, SWEEP_INTERVAL_MS);
  sweep.unref();

  return class MemoryAdapter implements Adapter {
    private readonly entries: Map<string, Entry>;

    constructor(private readonly model: string) {
      this.entries = models.get(model) ?? new Map();
      models.set(model, this.entries);
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const expiresAt = expiresIn ? now() + expiresIn * 1000 : Number.POSITIVE_INFINITY;
      this.entries.set(id, { payload, expiresAt });
      if (this.model === 'Session' && payload.uid) sessionIdByUid.set(payload.uid, id);
      if (payload.grantId) {
        const members = grants.get(payload.grantId) ?? new Set();
        members.add({ model: this.model, id });
        grants.set(payload.grantId, members);
      }
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      const entry = this.entries.get(id);
      if (!entry || entry.expiresAt <= now()) return undefined;
      return entry.payload;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const id = sessionIdByUid.get(uid);
      return id === undefined ? undefined : this.find(id);
    }

    async findByUserCode(): Promise<AdapterPayload | undefined> {
      return undefined; // no device flow
    }

    async consume(id: string): Promise<void> {
      const entry = this.entries.get(id);
      if (entry) entry.payload.consumed = Math.floor(now() / 1000);
    }

    async destroy(id: string): Promise<void> {
      this.entries.delete(id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      for (const { model, id } of grants.get(grantId) ?? []) models.get(model)?.delete(id);
      grants.delete(grantId);
    }
  };
}
