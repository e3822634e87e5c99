import { describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function script(name: string, env: Record<string, string>, args: string[] = []) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', join('scripts', name), ...args],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      },
    );
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('database scripts', () => {
  test('db:migrate applies the migrations once and db:seed adds the demo data once', async () => {
    const env = { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-scripts-')) };
    expect(await script('db-migrate.ts', env)).toEqual({
      code: 0,
      out:
        'applied: 001_foundation, 002_mfa, 003_oidc, 004_account_index_and_login_shadow, ' +
        '005_ca_identity_name_format, 006_hashed_oidc_payload_ids, 007_sealed_enrollment_tokens, ' +
        '008_login_failures_per_address, 009_identity_list_indexes, 010_rate_limits, ' +
        '011_instance_locks, 012_certificate_identity, 013_signer_token_lifetime, 014_mfa_enrollment_owner, ' +
        '015_api_session_origin, 016_identity_permissions, 017_policy_session_limit, ' +
        '018_policy_bind_tokens, 019_device_flow, 020_passkeys, 021_account_sessions, 022_audit_events, ' +
        '023_webhooks, 024_webhook_delivery_due_index, 025_compatibility_level\n',
    });
    expect((await script('db-migrate.ts', env)).out).toBe('already up to date\n');
    const seeded = await script('db-seed.ts', env);
    expect(seeded.out).toContain('seeded: policy demo-totp; identity demo-user');
    expect((await script('db-seed.ts', env)).out).toBe('demo data already present\n');
    // Four tsx processes, each opening the embedded database and running every migration: on two
    // loaded cores in a full run that takes longer than the default minute.
  }, 180_000);

  test('db:seed refuses to run in production unless forced', async () => {
    const env = { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-scripts-')), NODE_ENV: 'production' };
    const refused = await script('db-seed.ts', env);
    expect(refused.code).toBe(1);
    expect(refused.out).toContain('refusing to add demo identities with NODE_ENV=production');
  });
});
