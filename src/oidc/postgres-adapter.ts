import type { Knex } from 'knex';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { openPayload, sealPayload } from './stored-payload.js';

export interface PostgresAdapterDeps {
  knex: Knex;
  /**
   * Runs (awaited, inside the provider's request) whenever a Grant is destroyed: refresh-token
   * replay, `/oidc/revoke`, grant revocation. JWT access tokens are never stored, so this is where
   * their API session is revoked.
   */
  onGrantDestroyed: (grantId: string) => Promise<void>;
  now?: () => Date;
}

const epoch = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * Every id, uid and user code the provider generates is short printable ASCII; client ids are
 * ours. Anything else came from a client (a code, token or client_id parameter) and names no row,
 * so it is not looked up at all. Ids reach SQL only as their hash, but a uid or user code is
 * looked up as it is, and PostgreSQL would refuse a NUL there with an error instead of a miss.
 */
const PLAUSIBLE_KEY = /^[\x21-\x7e]{1,512}$/;
const plausible = (key: unknown): key is string => typeof key === 'string' && PLAUSIBLE_KEY.test(key);

/**
 * oidc-provider's adapter over one table shared by every Provider. `consume` is one
 * conditional UPDATE that fails the loser, so of N parallel redemptions exactly one wins. Every
 * model's id is stored only as its hash and never inside its payload (docs/adr/0004).
 */
export function createPostgresAdapter({
  knex,
  onGrantDestroyed,
  now = () => new Date(),
}: PostgresAdapterDeps) {
  return class PostgresAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      await oidcPayloadsRepository.upsert(knex, {
        model: this.model,
        id,
        payload: sealPayload(id, payload),
        grantId: payload.grantId,
        userCode: payload.userCode,
        uid: payload.uid,
        expiresAt: expiresIn ? new Date(now().getTime() + expiresIn * 1000) : null,
      });
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (!plausible(id)) return undefined;
      return this.reply(id, await oidcPayloadsRepository.find(knex, this.model, id, now()));
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      if (!plausible(uid)) return undefined;
      return this.reply(undefined, await oidcPayloadsRepository.findByUid(knex, this.model, uid, now()));
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      if (!plausible(userCode)) return undefined;
      return this.reply(
        undefined,
        await oidcPayloadsRepository.findByUserCode(knex, this.model, userCode, now()),
      );
    }

    async consume(id: string): Promise<void> {
      if (await oidcPayloadsRepository.consume(knex, this.model, id, now())) return;
      if (this.model === 'PushedAuthorizationRequest') {
        throw new errors.InvalidRequestUri('request_uri is invalid, expired, or was already used');
      }
      throw new errors.InvalidGrant(`${this.model} already consumed`);
    }

    async destroy(id: string): Promise<void> {
      await oidcPayloadsRepository.destroy(knex, this.model, id);
      if (this.model === 'Grant') await onGrantDestroyed(id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await oidcPayloadsRepository.deleteByGrantId(knex, grantId, this.model);
    }

    private reply(
      id: string | undefined,
      stored: Awaited<ReturnType<typeof oidcPayloadsRepository.find>>,
    ): AdapterPayload | undefined {
      if (!stored) return undefined;
      const payload = openPayload(id, stored.payload);
      return stored.consumedAt ? { ...payload, consumed: epoch(stored.consumedAt) } : payload;
    }
  };
}
