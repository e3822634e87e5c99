import { createHmac, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { SecretBox } from '../../crypto/secret-box.js';
import { secretsRepository } from '../../repositories/secrets-repository.js';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
export const RECOVERY_CODE_COUNT = 10;
export const RECOVERY_CODE_LENGTH = 12;
const PEPPER_NAME = 'mfa-recovery-code-pepper';

/** 12 base32 characters = 60 random bits (ASVS 5.0 V6.5.1 asks for at least 20). */
export function newRecoveryCode(): string {
  // 256 is a multiple of 32, so `byte & 31` keeps every character equally likely.
  return [...randomBytes(RECOVERY_CODE_LENGTH)].map((b) => BASE32[b & 31]).join('');
}

export const newRecoveryCodes = (): string[] => Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);

/** What users type: any case, with spaces or dashes between groups. Undefined if it cannot be one. */
export function normalizeRecoveryCode(input: string): string | undefined {
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return code.length === RECOVERY_CODE_LENGTH && /^[A-Z2-7]+$/.test(code) ? code : undefined;
}

export type RecoveryCodeHasher = (identityId: string, code: string) => Promise<string>;

/**
 * Recovery codes are stored as HMAC-SHA256(pepper, identity id ":" code), the pepper being one
 * random 256-bit key per deployment kept in `secrets` sealed with the master key.
 *
 * Why not Argon2id (ASVS 6.5.2 asks a salted slow hash for lookup secrets under 112 bits): the
 * slow hash defends a stolen database against offline guessing. Here a stolen database without
 * the master key gives nothing to guess against (the HMAC key is sealed), and a thief holding
 * the master key can open the TOTP secret itself, which is worth more than any recovery code.
 * The keyed hash is therefore as strong as the factor it backs up, and it is deterministic, so a
 * code is found and consumed by ONE atomic `UPDATE … WHERE code_hash = ? AND used_at IS NULL`
 * instead of ten 20 ms Argon2 checks per attempt. The identity id in the message acts as a salt.
 */
export function createRecoveryCodeHasher(knex: Knex, box: SecretBox): RecoveryCodeHasher {
  let pepper: Promise<Buffer> | undefined;
  const loadPepper = async () => {
    const sealed = await secretsRepository.putIfAbsent(
      knex,
      PEPPER_NAME,
      box.seal(randomBytes(32).toString('base64')),
    );
    return Buffer.from(box.open(sealed), 'base64');
  };
  return async (identityId, code) => {
    pepper ??= loadPepper().catch((err: unknown) => {
      pepper = undefined;
      throw err;
    });
    return createHmac('sha256', await pepper)
      .update(`${identityId}:${code}`)
      .digest('hex');
  };
}
