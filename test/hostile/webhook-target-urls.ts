import fc from 'fast-check';

/**
 * Webhook URLs the management API must refuse while `webhooks.allowPrivateTargets` is false
 * (docs/operations.md, "Webhook targets"): internal addresses in the spellings URL parsers accept,
 * `localhost` and names under it, and URLs that are no plain `https://` URL at all.
 */
export const REFUSED_TARGET_URLS: readonly string[] = [
  // Loopback, spelled as URL parsers read an IPv4 address.
  'https://127.0.0.1/hook',
  'https://127.0.0.1:8443/hook?x=1',
  'https://0x7f.1/',
  'https://2130706433/',
  'https://0177.0.0.1/',
  'https://0x7f000001/',
  'https://127.1/',
  'https://127.0.1/',
  'https://127.0.0.1./',
  'https://%31%32%37.0.0.1/',
  'https://１２７.０.０.１/',
  'https://127。0。0。1/',
  'HTTPS://127.0.0.1/',
  // The same, as IPv6 forms that carry it.
  'https://[::1]/',
  'https://[0:0:0:0:0:0:0:1]:443/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:7f00:1]/',
  'https://[::ffff:0:7f00:1]/',
  'https://[::127.0.0.1]/',
  'https://[64:ff9b::7f00:1]/',
  'https://[64:ff9b::127.0.0.1]/',
  'https://[2002:7f00:1::1]/',
  // Cloud metadata, CGNAT, private, unique-local and the rest.
  'https://169.254.169.254/latest/meta-data/',
  'https://[::ffff:169.254.169.254]/',
  'https://[fe80::1]/',
  'https://100.64.0.1/',
  'https://10.0.0.1/',
  'https://172.16.0.1/',
  'https://192.168.1.1/',
  'https://[fd00::1]/',
  'https://[fc00::]/',
  'https://[64:ff9b:1::1]/',
  'https://0.0.0.0/',
  'https://0/',
  'https://[::]/',
  'https://224.0.0.1/',
  'https://[ff02::1]/',
  'https://255.255.255.255/',
  'https://240.0.0.1/',
  // localhost and names under it.
  'https://localhost/hook',
  'https://localhost:8443/',
  'https://localhost./',
  'https://LOCALHOST/',
  'https://foo.localhost/',
  'https://a.b.localhost./',
  'https://localhos%74/',
  'https://ｌｏｃａｌｈｏｓｔ/',
  'https://local\u00adhost/',
  // Not a plain https:// URL.
  'http://receiver.invalid/hook',
  'http://127.0.0.1/',
  'ftp://receiver.invalid/',
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_',
  'javascript:alert(1)',
  'https:receiver.invalid/hook',
  'https:/receiver.invalid/hook',
  'https:\\\\receiver.invalid\\hook',
  '//receiver.invalid/hook',
  '/hook',
  'https://',
  'https:///127.0.0.1/',
  'https:///localhost/',
  // User names, passwords and fragments.
  'https://user:password@receiver.invalid/',
  'https://user@receiver.invalid/',
  'https://:@receiver.invalid/',
  'https://receiver.invalid@127.0.0.1/',
  'https://receiver.invalid%40127.0.0.1/',
  'https://receiver.invalid/hook#fragment',
  'https://receiver.invalid/hook#',
  // Spaces and control characters, where parsers drop them silently.
  'https://receiver.invalid/ho\u0000ok',
  'https://receiver.invalid/ho\tok',
  'https://127.0.0.1\t.receiver.invalid/',
  'https://receiver.invalid/\r\nX-Injected: 1',
  'https://receiver.invalid/ho ok',
  'https://receiver.invalid/\u007f',
  'https://receiver.invalid/\u0085',
  'https://receiver.invalid/\u001b[2J',
  'https://receiver.invalid/\u202e',
  // Longer than 2048 characters.
  `https://receiver.invalid/${'a'.repeat(2049 - 'https://receiver.invalid/'.length)}`,
  `https://${'a'.repeat(2041)}/`,
];

type V4 = [number, number, number, number];

/** The IPv4 ranges no webhook may reach, a random address in each. */
const refusedV4: fc.Arbitrary<V4> = fc
  .constantFrom<[V4, number]>(
    [[0, 0, 0, 0], 8],
    [[10, 0, 0, 0], 8],
    [[100, 64, 0, 0], 10],
    [[127, 0, 0, 0], 8],
    [[169, 254, 0, 0], 16],
    [[172, 16, 0, 0], 12],
    [[192, 168, 0, 0], 16],
    [[198, 18, 0, 0], 15],
    [[224, 0, 0, 0], 4],
    [[240, 0, 0, 0], 4],
  )
  .chain(([network, prefix]) =>
    fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 }).map((host) => {
      const n = (((network[0] << 24) | (network[1] << 16) | (network[2] << 8) | network[3]) >>> 0) + host;
      return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255] as V4;
    }),
  );

const hex = (n: number) => n.toString(16);
const word = (a: number, b: number) => hex((a << 8) | b);
const asInt = (v: V4) => ((v[0] << 24) | (v[1] << 16) | (v[2] << 8) | v[3]) >>> 0;

/** The host of a URL for `v`: every spelling a URL parser reads as that address. */
const v4Hosts = (v: V4): string[] => [
  v.join('.'),
  `${v.join('.')}.`,
  String(asInt(v)),
  `0x${hex(asInt(v))}`,
  v.map((n) => `0x${hex(n)}`).join('.'),
  v.map((n) => `0${n.toString(8)}`).join('.'),
  `${v[0]}.${(v[1] << 16) | (v[2] << 8) | v[3]}`,
  `${v[0]}.${v[1]}.${(v[2] << 8) | v[3]}`,
  `[::ffff:${v.join('.')}]`,
  `[::ffff:${word(v[0], v[1])}:${word(v[2], v[3])}]`,
  `[0:0:0:0:0:FFFF:${word(v[0], v[1]).toUpperCase()}:${word(v[2], v[3])}]`,
  `[64:ff9b::${word(v[0], v[1])}:${word(v[2], v[3])}]`,
  `[2002:${word(v[0], v[1])}:${word(v[2], v[3])}::]`,
];

const refusedV6Host = fc.oneof(
  fc.constant('[::1]'),
  fc.integer({ min: 0, max: 0xffff }).map((n) => `[fd00::${hex(n)}]`),
  fc.integer({ min: 0, max: 0xffff }).map((n) => `[fe80::${hex(n)}]`),
  fc.integer({ min: 0, max: 0xffff }).map((n) => `[ff0e::${hex(n)}]`),
  fc.integer({ min: 0, max: 0xffff }).map((n) => `[64:ff9b:1::${hex(n)}]`),
);

const localhostName = fc
  .tuple(
    fc.array(
      fc.stringMatching(/^[a-z0-9-]{1,12}$/).filter((l) => !/^-|-$/.test(l)),
      { maxLength: 2 },
    ),
    fc.constantFrom('localhost', 'LocalHost', 'LOCALHOST'),
    fc.boolean(),
  )
  .map(([labels, name, dot]) => [...labels, name].join('.') + (dot ? '.' : ''));

const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });
const pathPart = fc.constantFrom('/', '/hook', '/hooks/svc?token=t', '/latest/meta-data/iam', '');
const scheme = fc.constantFrom('https', 'HTTPS', 'Https');

/** A refused target URL drawn at random (seeded): an internal address or localhost, any spelling. */
export const refusedTargetUrl: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      { arbitrary: refusedV4.chain((v) => fc.constantFrom(...v4Hosts(v))), weight: 4 },
      { arbitrary: refusedV6Host, weight: 1 },
      { arbitrary: localhostName, weight: 1 },
    ),
    scheme,
    port,
    pathPart,
  )
  .map(([host, s, p, path]) => `${s}://${host}${p === undefined ? '' : `:${p}`}${path}`);
