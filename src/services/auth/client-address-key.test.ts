import { describe, expect, test } from '@jest/globals';
import { clientAddressKey } from './client-address-key.js';

describe('clientAddressKey', () => {
  test('an IPv4 address, plain or IPv4-mapped, is its own key', () => {
    expect(clientAddressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  test('IPv6 addresses of one /64 share a key, another /64 gets another', () => {
    const a = clientAddressKey('2001:db8:1:2:aaaa::1');
    expect(a).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe(a);
    expect(clientAddressKey('2001:db8:1:3::1')).not.toBe(a);
    expect(clientAddressKey('::1')).toBe('0:0:0:0::/64');
  });
});
