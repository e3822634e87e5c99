import { describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import { createAuditTrail } from './audit-trail.js';
import { createMetricsRegistry } from './metrics-registry.js';

/** The value of one sample line, e.g. `svc_logins_total{method="password",outcome="success"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('series counted from the audit trail', () => {
  const setup = () => {
    const metrics = createMetricsRegistry();
    const audit = createAuditTrail(pino({ level: 'silent' }));
    audit.subscribe(metrics.countAuditEvent);
    return { metrics, audit };
  };

  test('logins by method and outcome, second factors, revocations and key rotations', async () => {
    const { metrics, audit } = setup();
    audit.record({ event: 'auth.login', method: 'password', outcome: 'success', identityId: 'a' });
    audit.record({ event: 'auth.login', method: 'password', outcome: 'success', identityId: 'b' });
    audit.record({ event: 'auth.login', method: 'cert', outcome: 'failure', reason: 'UNKNOWN_CA' });
    audit.record({ event: 'auth.login', method: 'ext-jwt', outcome: 'lockout' });
    audit.record({ event: 'auth.second-factor', method: 'totp', outcome: 'failure' });
    audit.record({ event: 'auth.second-factor', method: 'totp', outcome: 'success' });
    audit.record({ event: 'auth.second-factor', method: 'recovery-code', outcome: 'success' });
    audit.record({ event: 'revocation.published', kind: 'identity' });
    audit.record({ event: 'revocation.received', kind: 'identity' });
    audit.record({ event: 'revocation.received', kind: 'api_session' });
    audit.record({ event: 'key.rotated' });
    audit.record({ event: 'identity.created', identityId: 'c' });
    const text = await metrics.render();

    expect(sample(text, 'svc_logins_total{method="password",outcome="success"}')).toBe(2);
    expect(sample(text, 'svc_logins_total{method="cert",outcome="failure"}')).toBe(1);
    expect(sample(text, 'svc_logins_total{method="ext-jwt",outcome="lockout"}')).toBe(1);
    expect(sample(text, 'svc_second_factors_total{method="totp",outcome="failure"}')).toBe(1);
    expect(sample(text, 'svc_second_factors_total{method="totp",outcome="success"}')).toBe(1);
    expect(sample(text, 'svc_second_factors_total{method="recovery-code",outcome="success"}')).toBe(1);
    expect(sample(text, 'svc_revocations_published_total')).toBe(1);
    expect(sample(text, 'svc_revocations_received_total')).toBe(2);
    expect(sample(text, 'svc_key_rotations_total')).toBe(1);
    // Ids and reasons are logged, never labels.
    expect(text).not.toContain('UNKNOWN_CA');
    expect(text).not.toMatch(/identityId|"a"|"b"|"c"/);
  });

  test('values outside the known lists are counted as `other`, so series stay bounded', async () => {
    const { metrics, audit } = setup();
    for (let i = 0; i < 50; i++) {
      audit.record({ event: 'auth.login', method: `method-${i}`, outcome: 'success' });
      audit.record({ event: 'auth.second-factor', method: 'totp', outcome: `odd-${i}` as 'success' });
      metrics.countGrant(`urn:made-up:${i}`, false);
    }
    metrics.countGrant(undefined, false);
    const text = await metrics.render();

    expect(sample(text, 'svc_logins_total{method="other",outcome="success"}')).toBe(50);
    expect(sample(text, 'svc_second_factors_total{method="totp",outcome="other"}')).toBe(50);
    expect(sample(text, 'svc_token_grants_total{grant_type="other",outcome="failure"}')).toBe(51);
    expect(text).not.toMatch(/method-\d|odd-\d|made-up/);
  });

  test('grants and password verification times are recorded as reported', async () => {
    const { metrics } = setup();
    metrics.countGrant('authorization_code', true);
    metrics.countGrant('refresh_token', true);
    metrics.countGrant('refresh_token', false);
    metrics.observePasswordVerify(0.04);
    metrics.observePasswordVerify(0.3);
    const text = await metrics.render();

    expect(sample(text, 'svc_token_grants_total{grant_type="authorization_code",outcome="success"}')).toBe(1);
    expect(sample(text, 'svc_token_grants_total{grant_type="refresh_token",outcome="success"}')).toBe(1);
    expect(sample(text, 'svc_token_grants_total{grant_type="refresh_token",outcome="failure"}')).toBe(1);
    expect(sample(text, 'svc_password_verify_seconds_count')).toBe(2);
    expect(sample(text, 'svc_password_verify_seconds_bucket{le="0.05"}')).toBe(1);
    expect(sample(text, 'svc_password_verify_seconds_sum')).toBeCloseTo(0.34);
  });
});
