import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import { secretsRepository } from '../repositories/secrets-repository.js';

const CHECK_NAME = 'master-key-check';
const CHECK_TEXT = 'svc master key check';

const WRONG_KEY =
  'the master key cannot decrypt the secrets in this database: start every instance with the SVC_MASTER_KEY the database was created with';

function refuseUnlessOpens(box: SecretBox, stored: string): void {
  let opened: string | undefined;
  try {
    opened = box.open(stored);
  } catch {
    opened = undefined;
  }
  if (opened !== CHECK_TEXT) throw new Error(WRONG_KEY);
}

/**
 * Refuses to start with a master key that cannot decrypt the database's secrets:
 * every instance of one deployment needs the same SVC_MASTER_KEY. The first start of a new
 * database records what this key seals.
 */
export async function verifyMasterKey(knex: Knex, box: SecretBox): Promise<void> {
  refuseUnlessOpens(box, await secretsRepository.putIfAbsent(knex, CHECK_NAME, box.seal(CHECK_TEXT)));
}

/**
 * The same check before migrating, writing nothing: an instance started with the wrong key must
 * leave the schema (and its compatibility level) as it found it. A database not migrated yet has
 * nothing to check.
 */
export async function verifyMasterKeyBeforeMigrating(knex: Knex, box: SecretBox): Promise<void> {
  const stored = await secretsRepository.getIfMigrated(knex, CHECK_NAME);
  if (stored !== undefined) refuseUnlessOpens(box, stored);
}

/**
 * The restore step's check: a restored controller database always holds the record of its key,
 * so a database without one is not a restore (a wrong DATABASE_URL, an empty database) and is
 * refused rather than bound to whatever key was given.
 */
export async function verifyRestoredMasterKey(knex: Knex, box: SecretBox): Promise<void> {
  const stored = await secretsRepository.getIfMigrated(knex, CHECK_NAME);
  if (stored === undefined) {
    throw new Error(
      'this database holds no record of a master key: it is not a restored controller database (check DATABASE_URL or the data directory)',
    );
  }
  refuseUnlessOpens(box, stored);
}
