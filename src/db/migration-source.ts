import type { Knex } from 'knex';
import * as m001 from '../../migrations/001_foundation.js';
import * as m002 from '../../migrations/002_mfa.js';
import * as m003 from '../../migrations/003_oidc.js';
import * as m004 from '../../migrations/004_account_index_and_login_shadow.js';
import * as m005 from '../../migrations/005_ca_identity_name_format.js';
import * as m006 from '../../migrations/006_hashed_oidc_payload_ids.js';
import * as m007 from '../../migrations/007_sealed_enrollment_tokens.js';
import * as m008 from '../../migrations/008_login_failures_per_address.js';
import * as m009 from '../../migrations/009_identity_list_indexes.js';
import * as m010 from '../../migrations/010_rate_limits.js';
import * as m011 from '../../migrations/011_instance_locks.js';
import * as m012 from '../../migrations/012_certificate_identity.js';
import * as m013 from '../../migrations/013_signer_token_lifetime.js';
import * as m014 from '../../migrations/014_mfa_enrollment_owner.js';
import * as m015 from '../../migrations/015_api_session_origin.js';
import * as m016 from '../../migrations/016_identity_permissions.js';
import * as m017 from '../../migrations/017_policy_session_limit.js';
import * as m018 from '../../migrations/018_policy_bind_tokens.js';
import * as m019 from '../../migrations/019_device_flow.js';
import * as m020 from '../../migrations/020_passkeys.js';
import * as m021 from '../../migrations/021_account_sessions.js';
import * as m022 from '../../migrations/022_audit_events.js';
import * as m023 from '../../migrations/023_webhooks.js';
import * as m024 from '../../migrations/024_webhook_delivery_due_index.js';
import * as m025 from '../../migrations/025_compatibility_level.js';

/**
 * Migrations listed in code: names carry no file extension, so tsx, jest and dist agree
 * (`.ts` under tsx and jest, `.js` in dist). Append only; a landed migration is never edited.
 */
const migrations: Record<string, Knex.Migration> = {
  '001_foundation': m001,
  '002_mfa': m002,
  '003_oidc': m003,
  '004_account_index_and_login_shadow': m004,
  '005_ca_identity_name_format': m005,
  '006_hashed_oidc_payload_ids': m006,
  '007_sealed_enrollment_tokens': m007,
  '008_login_failures_per_address': m008,
  '009_identity_list_indexes': m009,
  '010_rate_limits': m010,
  '011_instance_locks': m011,
  '012_certificate_identity': m012,
  '013_signer_token_lifetime': m013,
  '014_mfa_enrollment_owner': m014,
  '015_api_session_origin': m015,
  '016_identity_permissions': m016,
  '017_policy_session_limit': m017,
  '018_policy_bind_tokens': m018,
  '019_device_flow': m019,
  '020_passkeys': m020,
  '021_account_sessions': m021,
  '022_audit_events': m022,
  '023_webhooks': m023,
  '024_webhook_delivery_due_index': m024,
  '025_compatibility_level': m025,
};

/** The newest migration this code knows: what a database's compatibility level is compared with. */
export const newestMigration = Object.keys(migrations).sort().at(-1)!;

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
