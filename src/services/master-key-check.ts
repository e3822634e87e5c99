import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import { secretsRepository } from '../repositories/secrets-repository.js';

const CHECK_NAME = 'master-key-check';
const CHECK_TEXT = 'svc master key check';

/**
 * Refuses to start with a master key that cannot decrypt the database's secrets:
 * every instance of one deployment needs the same SVC_MASTER_KEY.
 */
export async function verifyMasterKey(knex: Knex, box: SecretBox): Promise<void> {
  const stored = await secretsRepository.putIfAbsent(knex, CHECK_NAME, box.seal(CHECK_TEXT));
  let opened: string | undefined;
  try {
    opened = box.open(stored);
  } catch {
    opened = undefined;
  }
  if (opened !== CHECK_TEXT) {
    throw new Error(
      'the master key cannot decrypt the secrets in this database: start every instance with the SVC_MASTER_KEY the database was created with',
    );
  }
}
