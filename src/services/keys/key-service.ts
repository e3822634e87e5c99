import type { Knex } from 'knex';
import { inTransaction } from '../../db/transaction.js';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { SecretBox } from '../../crypto/secret-box.js';
import { NO_AUDIT, type AuditTrail } from '../audit-trail.js';
import { signingKeysRepository, type SigningKey } from '../../repositories/signing-keys-repository.js';

import type { KeyState, KeyView } from '../../schemas/key-views.js';

export type { KeyState, KeyView };

/** What a process needs to sign and verify: built from the table, rebuilt when it changes. */
export interface KeySet {
  /** Private JWKs, the signing key first: oidc-provider signs with the first matching key. */
  privateJwks: JWK[];
  publicJwks: JWK[];
  signingKid: string;
  /** Changes whenever the published set or the signer changes. */
  version: string;
  /** When the state next changes by time alone (a key starts signing, a retired key drops out). */
  nextChangeAt?: Date;
}

export interface KeyServiceDeps {
  knex: Knex;
  box: SecretBox;
  /** edge.oidc.keyRotationGrace (s): a new key is published this long before it signs. */
  rotationGraceSeconds: number;
  /** The longest lifetime of a token signed by a key (access and ID tokens), in seconds. */
  maxTokenLifetimeSeconds: number;
  audit?: AuditTrail;
  now?: () => Date;
}

const ALG = 'RS256';
// Tokens may be verified a little after `exp` by clients with clock skew (oidc-provider: 15 s).
const RETIRE_MARGIN_MS = 60_000;
const CLOCK_SKEW_MS = 5 * 60_000;

/** A new RS256 key pair, its private JWK sealed with the master key; `kid` is its thumbprint. */
async function generateSigningKey(box: SecretBox): Promise<Omit<SigningKey, 'createdAt' | 'signsFrom'>> {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { modulusLength: 2048, extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  const meta = { kid, alg: ALG, use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), ...meta };
  return {
    kid,
    alg: ALG,
    privateJwkEnc: box.seal(JSON.stringify(privateJwk)),
    publicJwk: { ...pub, ...meta },
    retiredAt: null,
  };
}

/**
 * After a restore (docs/operations.md, "Backups"): every stored key is withdrawn at once and a new
 * one signs from now, in `trx`, so that no token signed before the restore verifies any more, here
 * or at a resource server once it fetches `/oidc/keys` again. Returns the new key's id and how many
 * keys were withdrawn.
 */
export async function replaceSigningKeys(
  trx: Knex.Transaction,
  box: SecretBox,
): Promise<{ kid: string; withdrawn: number }> {
  const key = await generateSigningKey(box);
  await signingKeysRepository.lock(trx);
  const withdrawn = await signingKeysRepository.deleteAll(trx);
  // Signing already on an instance whose clock is a little behind this machine's.
  await signingKeysRepository.insert(trx, { ...key, signsFrom: new Date(Date.now() - CLOCK_SKEW_MS) });
  return { kid: key.kid, withdrawn };
}

/**
 * Signing keys in the database: private parts sealed with the master key,
 * one created under an advisory lock on first start, rotated by publishing first and signing
 * after the grace period; a retired key stays published until every token it signed has expired.
 */
export function createKeyService(deps: KeyServiceDeps) {
  const now = deps.now ?? (() => new Date());
  const lifetimeMs = deps.maxTokenLifetimeSeconds * 1000 + RETIRE_MARGIN_MS;

  function stateOf(key: SigningKey, at: Date): KeyState | 'gone' {
    if (key.signsFrom > at) return 'published';
    if (key.retiredAt === null || key.retiredAt > at) return 'signing';
    return key.retiredAt.getTime() + lifetimeMs > at.getTime() ? 'retiring' : 'gone';
  }

  const generate = () => generateSigningKey(deps.box);

  const view = (key: SigningKey, state: KeyState): KeyView => ({
    kid: key.kid,
    alg: key.alg,
    state,
    createdAt: key.createdAt.toISOString(),
    signsFrom: key.signsFrom.toISOString(),
    retiredAt: key.retiredAt?.toISOString() ?? null,
  });

  function nextChange(keys: SigningKey[], at: Date): Date | undefined {
    const moments = keys.flatMap((k) => [
      k.signsFrom.getTime(),
      ...(k.retiredAt ? [k.retiredAt.getTime(), k.retiredAt.getTime() + lifetimeMs] : []),
    ]);
    const future = moments.filter((t) => t > at.getTime());
    return future.length > 0 ? new Date(Math.min(...future)) : undefined;
  }

  return {
    /** First start: one signing key, created once across all instances (advisory lock). */
    async ensureKey(): Promise<void> {
      await inTransaction(deps.knex, async (trx) => {
        await signingKeysRepository.lock(trx);
        const keys = await signingKeysRepository.list(trx);
        if (keys.some((k) => stateOf(k, now()) === 'signing')) return;
        await signingKeysRepository.insert(trx, { ...(await generate()), signsFrom: now() });
      });
    },

    /**
     * Publishes a new key now; it signs after the grace period, when the current one retires.
     * Rotations sent together (an admin's retry, two operators at once, on any instances) publish
     * one key: a rotation that finds, under the lock, a key still waiting for its grace period
     * that is newer than the newest key when it began was overtaken by a concurrent one and
     * answers with that key instead of publishing another, which would never sign. The key is
     * generated under the lock, so the overtaken ones skip the slow RSA generation.
     */
    async rotate(): Promise<KeyView> {
      const newestBefore = (await signingKeysRepository.list(deps.knex))[0]?.kid;
      const { key, fresh } = await inTransaction(deps.knex, async (trx, afterCommit) => {
        await signingKeysRepository.lock(trx);
        const [newest] = await signingKeysRepository.list(trx);
        if (newest && newest.kid !== newestBefore && stateOf(newest, now()) === 'published') {
          return { key: newest, fresh: false };
        }
        const material = await generate();
        // Taken after the generation, so that the whole grace period remains.
        const at = now();
        const made = {
          ...material,
          createdAt: at,
          signsFrom: new Date(at.getTime() + deps.rotationGraceSeconds * 1000),
        };
        await signingKeysRepository.retireUnretired(trx, made.signsFrom);
        await signingKeysRepository.insert(trx, made);
        await signingKeysRepository.deleteRetiredBefore(trx, new Date(at.getTime() - lifetimeMs));
        await (deps.audit ?? NO_AUDIT).store(trx, afterCommit, {
          event: 'key.rotated',
          kid: made.kid,
          alg: made.alg,
          signsFrom: made.signsFrom.toISOString(),
        });
        return { key: made, fresh: true };
      });
      return view(key, fresh ? (stateOf(key, now()) as KeyState) : 'published');
    },

    async list(): Promise<KeyView[]> {
      const at = now();
      const keys = await signingKeysRepository.list(deps.knex);
      return keys.flatMap((k) => {
        const state = stateOf(k, at);
        return state === 'gone' ? [] : [view(k, state)];
      });
    },

    async loadKeySet(): Promise<KeySet> {
      const at = now();
      const keys = (await signingKeysRepository.list(deps.knex)).filter((k) => stateOf(k, at) !== 'gone');
      // Newest first: the newest key whose signing time has come signs.
      const signer = keys.find((k) => stateOf(k, at) === 'signing');
      if (!signer) throw new Error('no signing key in the database');
      const ordered = [signer, ...keys.filter((k) => k !== signer)];
      return {
        privateJwks: ordered.map((k) => JSON.parse(deps.box.open(k.privateJwkEnc)) as JWK),
        publicJwks: ordered.map((k) => k.publicJwk as JWK),
        signingKid: signer.kid,
        version: `${signer.kid}|${ordered
          .map((k) => k.kid)
          .sort()
          .join(',')}`,
        nextChangeAt: nextChange(keys, at),
      };
    },
  };
}

export type KeyService = ReturnType<typeof createKeyService>;
