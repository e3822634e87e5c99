import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import { newToken } from '../crypto/random.js';
import { secretsRepository } from '../repositories/secrets-repository.js';

const SECRET_NAME = 'oidc-cookie-keys';

/**
 * The keygrip keys that sign oidc-provider's cookies (and our in-process resume cookie): random,
 * created once by the first instance, sealed with the master key, the same on every instance
 * and issuer: any instance may finish a login another began (ADR 0005;
 * https://github.com/panva/node-oidc-provider/issues/94).
 */
export async function loadCookieKeys(knex: Knex, box: SecretBox): Promise<string[]> {
  const sealed = await secretsRepository.putIfAbsent(
    knex,
    SECRET_NAME,
    box.seal(JSON.stringify([newToken()])),
  );
  const keys = JSON.parse(box.open(sealed)) as unknown;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === 'string')) {
    throw new Error(`secret ${SECRET_NAME} is not a list of keys`);
  }
  return keys;
}
