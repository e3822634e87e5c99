import fc from 'fast-check';

/** Strings that have broken parsers, databases and loggers before. */
const NASTY = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '%00',
  '\r\n',
  '\t',
  '\u202e\u0645\u0631\u062d\u0628\u0627', // right-to-left override + Arabic
  'e\u0301\u0301\u0301\u0301', // combining marks
  '\u{1F600}\u{10FFFF}', // astral
  '\ufeff', // BOM
  '\u200balice', // zero width space: reads as alice
  'al\u00adice', // soft hyphen
  'alice\u{E0041}', // tag character
  '\u2028\u2029',
  '../../etc/passwd',
  "' OR '1'='1",
  '"; DROP TABLE identities; --',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  'null',
  'true',
  '-1',
  '1e309',
  '99999999999999999999999',
  'NaN',
  'name contains "',
  'name = "x" and',
  'Bearer ',
  '-----BEGIN CERTIFICATE-----',
  'admin\u0000',
];

/** Base64, JWT and PEM look-alikes that are not what they look like. */
export const badCredentialString = fc.oneof(
  fc.constantFrom(
    'e30.e30.',
    'eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.',
    'eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.e30.AAAA',
    'a.b.c',
    '...',
    '====',
    'not base64 !!!',
    '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
    '-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n',
    '-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----',
    '-----BEGIN PRIVATE KEY-----\nMII=\n-----END PRIVATE KEY-----',
  ),
  fc
    .tuple(fc.base64String({ maxLength: 60 }), fc.base64String({ maxLength: 60 }))
    .map(([a, b]) => `${a}.${b}.${a}`),
  fc
    .base64String({ maxLength: 80 })
    .map((b) => `-----BEGIN CERTIFICATE-----\n${b}\n-----END CERTIFICATE-----`),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,200}$/),
);

/** Unicode of every plane, lone surrogates included (JSON.stringify escapes those as \ud800). */
const unicodeText = fc.string({ unit: 'binary', maxLength: 40 });
const surrogates = fc
  .array(fc.integer({ min: 0xd800, max: 0xdfff }), { minLength: 1, maxLength: 4 })
  .map((units) => String.fromCharCode(...units));
const controls = fc
  .array(fc.integer({ min: 0, max: 0x1f }), { minLength: 1, maxLength: 6 })
  .map((codes) => String.fromCharCode(...codes));

/**
 * What makes one name read as another (PRECIS, RFC 8264): default-ignorable code points (zero
 * width space, soft hyphen, BOM, word joiner, invisible operators, Hangul filler, variation
 * selector), tag characters, ZWNJ/ZWJ where RFC 5892 A.1/A.2 allow them (after a virama, between
 * joining Arabic letters) and where they do not, and text that is not NFC.
 */
export const INVISIBLE_PIECES = [
  '\u200b',
  '\u00ad',
  '\ufeff',
  '\u2060',
  '\u2061',
  '\u2062',
  '\u2063',
  '\u2064',
  '\u3164',
  '\ufe0f',
  '\u034f',
  '\u{E0001}',
  '\u{E0041}\u{E0042}',
  '\u{E007F}',
  '\u200c',
  '\u200d',
  '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', // ZWNJ in context (Persian)
  '\u0915\u094d\u200d\u0937', // ZWJ in context (after a Devanagari virama)
  'a\u200cb',
  '\u0627\u200c\u0628', // ZWNJ after a right-joining letter: out of context
  'e\u0301', // NFD of é
  '\u212b', // ANGSTROM SIGN: NFC is U+00C5
  'A\u030a', // NFD of Å
  '\uff41\uff4c\uff49\uff43\uff45', // fullwidth "alice": FreeformClass only
];

export const invisibleText = fc
  .tuple(
    fc.constantFrom('', 'alice', 'zz-', '\u0645'),
    fc.array(fc.constantFrom(...INVISIBLE_PIECES), { minLength: 1, maxLength: 3 }),
    fc.constantFrom('', 'lice', '-x', '\u0645'),
  )
  .map(([head, pieces, tail]) => head + pieces.join('') + tail);

/** A few long values, kept well under the body limit so that many fit in a run. */
const long = fc
  .tuple(fc.constantFrom('a', '\u{1F600}', '%', '\u0301', '"', '\\'), fc.integer({ min: 256, max: 20_000 }))
  .map(([c, n]) => c.repeat(n));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY), weight: 4 },
  { arbitrary: unicodeText, weight: 3 },
  { arbitrary: fc.string({ maxLength: 30 }), weight: 2 },
  { arbitrary: surrogates, weight: 1 },
  { arbitrary: invisibleText, weight: 2 },
  { arbitrary: controls, weight: 1 },
  { arbitrary: badCredentialString, weight: 2 },
  { arbitrary: long, weight: 1 },
  {
    arbitrary: fc.tuple(fc.string({ maxLength: 8 }), controls, surrogates).map((p) => p.join('')),
    weight: 1,
  },
);

/** Any JSON value, strings hostile, of bounded size. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.oneof(
      fc.integer(),
      fc.double(),
      fc.constantFrom(0, -0, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, Number.MIN_VALUE),
    ),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Deep nesting as raw JSON text (JSON.stringify would recurse as deep). */
export const deeplyNestedJson = fc
  .tuple(fc.integer({ min: 1_000, max: 100_000 }), fc.constantFrom('[', '{"a":'), fc.boolean())
  .map(([depth, open, closed]) => {
    const close = open === '[' ? ']' : '}';
    return open.repeat(depth) + '1' + (closed ? close.repeat(depth) : '');
  });

/** Bodies that claim to be JSON and are not. */
export const malformedJson = fc.oneof(
  fc.constantFrom(
    '{',
    '}',
    '{"a":}',
    '{"a" 1}',
    "{'a': 1}",
    '{"a":1,}',
    '[1,2',
    'NaN',
    '{"a":NaN}',
    '{"a":Infinity}',
    '\ufeff{}',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    '{"__proto__":{"isAdmin":true}}',
    '{"constructor":{"prototype":{"isAdmin":true}}}',
    '"just a string"',
    '12',
    'null',
    'true',
    '[]',
    '{"a":1}{"a":2}',
    '{"a":"\\x41"}',
    '{"a":1e99999}',
    '\u0000',
  ),
  hostileJson.map((v) => JSON.stringify(v)?.slice(0, -1) ?? '{'),
  fc.string({ maxLength: 40 }),
);
