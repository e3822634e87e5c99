import { describe, expect, test } from '@jest/globals';
import type { AuditEvent } from '../../src/services/audit-trail.js';
import { attemptAggregateKey } from '../../src/services/attempt-aggregate-key.js';

describe('attemptAggregateKey', () => {
  const failure: AuditEvent = { event: 'auth.login', outcome: 'failure' as const, method: 'password' };

  test('an IPv6 client counts by its /64, an IPv4-mapped one by its IPv4 address', () => {
    const key = attemptAggregateKey({ ...failure, sourceAddress: '2001:db8:1:2::a' });
    expect(attemptAggregateKey({ ...failure, sourceAddress: '2001:db8:1:2:ffff:ffff:ffff:ffff' })).toEqual(
      key,
    );
    expect(attemptAggregateKey({ ...failure, sourceAddress: '2001:db8:1:3::a' })).not.toEqual(key);
    expect(attemptAggregateKey({ ...failure, sourceAddress: '::ffff:203.0.113.7' })).toEqual(
      attemptAggregateKey({ ...failure, sourceAddress: '203.0.113.7' }),
    );
  });

  test('the method and the identity are part of the key; nothing else of the event is', () => {
    const key = attemptAggregateKey({ ...failure, identityId: 'id-1', sourceAddress: '203.0.113.7' });
    expect(
      attemptAggregateKey({
        ...failure,
        method: 'passkey',
        identityId: 'id-1',
        sourceAddress: '203.0.113.7',
      }),
    ).not.toEqual(key);
    expect(attemptAggregateKey({ ...failure, sourceAddress: '203.0.113.7' })).not.toEqual(key);
    // Whatever else the event carries (its reason, any detail) keys nothing.
    const unknown: AuditEvent = { ...failure, reason: 'unknown-username', sourceAddress: '203.0.113.7' };
    const named: AuditEvent = { ...unknown, username: 'someone' };
    const otherReason: AuditEvent = { ...unknown, reason: 'other' };
    expect(attemptAggregateKey(named)).toEqual(attemptAggregateKey(otherReason));
  });
});
