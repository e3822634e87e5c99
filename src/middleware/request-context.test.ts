import { describe, expect, test } from '@jest/globals';
import type { Context } from 'koa';
import { clientAddress } from './request-context.js';

describe('the client address', () => {
  test('an IPv4 client has one spelling, also when it arrives as an IPv4-mapped IPv6 address', () => {
    const of = (ip: string) => clientAddress({ ip } as Context);
    expect(of('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(of('203.0.113.7')).toBe('203.0.113.7');
    expect(of('2001:db8::7')).toBe('2001:db8::7');
  });
});
