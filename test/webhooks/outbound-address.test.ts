import { describe, expect, test } from '@jest/globals';
import { privateAddressKind } from '../../src/services/webhooks/private-address.js';
import { webhookUrlProblem } from '../../src/services/webhooks/webhook-target.js';

describe('privateAddressKind: every range a webhook must not reach, in every spelling', () => {
  test.each([
    // IPv4 ranges
    ['10.0.0.5', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    // IPv6 ranges
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::', 'unspecified'],
    ['[::]', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fd00::1', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001::1', 'reserved'],
    ['2001:2::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['::2:1', 'unspecified'], // IPv4-compatible 0.2.0.1
    // IPv4 inside IPv6: mapped (dotted and hex), translated, compatible, NAT64, 6to4
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
    ['::ffff:10.0.0.5', 'private'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::c0a8:101', 'private'],
    ['64:ff9b:1::1', 'private'],
    ['64:ff9b:1:ffff::8.8.8.8', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:a00:1::', 'private'],
    // not an address at all: never connected to
    ['localhost', 'reserved'],
    ['', 'reserved'],
  ])('%s is %s', (address, kind) => {
    expect(privateAddressKind(address)).toBe(kind);
  });

  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '100.63.255.255', // just below CGNAT
    '100.128.0.0', // just above
    '172.15.255.255',
    '172.32.0.0',
    '192.0.1.255',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2001:4860:4860::8888',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::808:808', // a public IPv4 address through the well-known NAT64 prefix
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(privateAddressKind(address)).toBeUndefined();
  });
});

describe('webhookUrlProblem', () => {
  test.each([
    'https://hooks.example.com/in',
    'https://hooks.example.com:8443/in?tenant=a&x=1',
    'https://8.8.8.8/hook',
    'https://[2001:4860:4860::8888]/hook',
    'https://xn--bcher-kva.example/hook',
    'HTTPS://HOOKS.EXAMPLE.COM/in',
  ])('%s is acceptable', (url) => {
    expect(webhookUrlProblem(url, false)).toBeUndefined();
  });

  test.each([
    ['http://hooks.example.com/in', 'must be an https:// URL'],
    ['ftp://hooks.example.com/in', 'must be an https:// URL'],
    ['https:hooks.example.com/in', 'must be an https:// URL'],
    ['https:\\\\hooks.example.com/in', 'must be an https:// URL'],
    ['/relative', 'is not an absolute URL'],
    ['hooks.example.com/in', 'is not an absolute URL'],
    ['https://', 'is not an absolute URL'],
    ['https://user:pw@hooks.example.com/in', 'must not contain a user name or password'],
    ['https://user@hooks.example.com/in', 'must not contain a user name or password'],
    ['https://@hooks.example.com/in', 'must not contain a user name or password'],
    ['https://hooks.example.com/in#frag', 'must not have a fragment'],
    ['https://hooks.example.com/in#', 'must not have a fragment'],
    ['https://hooks.example.com/a b', 'must not contain spaces or control characters'],
    ['https://hooks.exam\nple.com/in', 'must not contain spaces or control characters'],
    ['https://hooks.example.com/in\t', 'must not contain spaces or control characters'],
    [`https://hooks.example.com/${'a'.repeat(2030)}`, 'must be at most 2048 characters'],
  ])('%s %s', (url, problem) => {
    expect(webhookUrlProblem(url, false)).toBe(problem);
    // Allowing private targets relaxes nothing of the URL's form.
    expect(webhookUrlProblem(url, true)).toBe(problem);
  });

  test('a URL of exactly 2048 characters is acceptable', () => {
    const url = `https://hooks.example.com/${'a'.repeat(2048 - 'https://hooks.example.com/'.length)}`;
    expect(url.length).toBe(2048);
    expect(webhookUrlProblem(url, false)).toBeUndefined();
  });

  test.each([
    ['https://127.0.0.1/hook', 'names the loopback address 127.0.0.1'],
    ['https://10.0.0.5:8443/hook', 'names the private address 10.0.0.5'],
    ['https://169.254.169.254/latest/meta-data', 'names the link-local address 169.254.169.254'],
    ['https://100.64.0.1/', 'names the CGNAT address 100.64.0.1'],
    ['https://0.0.0.0/', 'names the unspecified address 0.0.0.0'],
    ['https://255.255.255.255/', 'names the broadcast address 255.255.255.255'],
    ['https://[::]/', 'names the unspecified address ::'],
    ['https://[::1]/', 'names the loopback address ::1'],
    ['https://[fd00::1]/', 'names the unique-local address fd00::1'],
    ['https://[fe80::1]/', 'names the link-local address fe80::1'],
    // The URL parser writes the mapped forms in hex: both spellings are the same address.
    ['https://[::ffff:127.0.0.1]/', 'names the loopback address ::ffff:7f00:1'],
    ['https://[::ffff:7f00:1]/', 'names the loopback address ::ffff:7f00:1'],
    ['https://[64:ff9b::7f00:1]/', 'names the loopback address 64:ff9b::7f00:1'],
    ['https://[64:ff9b::127.0.0.1]/', 'names the loopback address 64:ff9b::7f00:1'],
    // Other spellings of IPv4 addresses are normalized by the URL parser before the check.
    ['https://2130706433/', 'names the loopback address 127.0.0.1'],
    ['https://0x7f.1/', 'names the loopback address 127.0.0.1'],
    ['https://0177.0.0.1/', 'names the loopback address 127.0.0.1'],
    ['https://127.1/', 'names the loopback address 127.0.0.1'],
    ['https://0/', 'names the unspecified address 0.0.0.0'],
    ['https://localhost/hook', 'names localhost'],
    ['https://LOCALHOST./hook', 'names localhost'],
    ['https://app.localhost:8443/hook', 'names localhost'],
  ])('%s %s, unless private targets are allowed', (url, problem) => {
    expect(webhookUrlProblem(url, false)).toBe(`${problem} (allowed only with webhooks.allowPrivateTargets)`);
    expect(webhookUrlProblem(url, true)).toBeUndefined();
  });
});
