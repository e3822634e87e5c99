import fc from 'fast-check';
import type { Operation } from './operations.js';
import {
  badCredentialString,
  deeplyNestedJson,
  hostileJson,
  hostileString,
  malformedJson,
} from './hostile-values.js';

export type Caller = 'anonymous' | 'garbage' | 'admin-session' | 'admin-bearer';

export interface HostileRequest {
  operation: string;
  caller: Caller;
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body?: string;
  /** Over the 1 MiB limit on purpose: an authorised caller must get 413. */
  oversize?: boolean;
  /** Index into Targets.clientCertificates: the TLS client certificate chain presented. */
  clientCertificate?: number;
}

/** What the suite knows of the server: real ids to aim at, and the credentials of each caller. */
export interface Targets {
  /**
   * Real ids by collection, named as in the paths (`identities`, `cas`, `webhooks`, and
   * `deliveries` for a webhook's `{deliveryId}`).
   */
  ids: Record<string, string[]>;
  authRequestIds: string[];
  /** Real codes and refresh tokens, issued under another issuer than the one requests pick by default. */
  grantTokens: { codes: string[]; refreshTokens: string[] };
  /**
   * Device codes (pending, confirmed, used, expired) and user codes (pending, used), some of them
   * as a person might type them (lower case, without the dash).
   */
  device: { deviceCodes: string[]; userCodes: string[] };
  /** The Host values of the listener's issuers: any of them may be sent. */
  hosts: string[];
  credentials: Record<'admin-session' | 'admin-bearer', Record<string, string>>;
  /**
   * Certificates no request may turn into anything (docs/operations.md "Client certificates"):
   * PEM texts for certificate members and bodies, and how many TLS client chains the suite holds
   * (a leaf under an expired intermediate, a serverAuth-only leaf, both of a verified CA with
   * auto CA enrollment on).
   */
  certificatePems: string[];
  clientCertificates: number;
}

export const BODY_LIMIT = 1024 * 1024;

/**
 * Percent-encoding that also carries lone surrogates (which encodeURIComponent refuses) as the
 * invalid UTF-8 a hostile client would send.
 */
export function encodeAny(s: string): string {
  return s
    .split(/([\ud800-\udfff])/u)
    .map((part) => {
      if (!/^[\ud800-\udfff]$/u.test(part)) return encodeURIComponent(part);
      const c = part.charCodeAt(0);
      return [0xed, 0xa0 | ((c >> 6) & 0x1f), 0x80 | (c & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    })
    .join('');
}

const ENCODED_NUL_OR_SLASH = fc.constantFrom('%00', '%2F', '%2e%2e', '%', '%zz', '%C0%80', '%ED%A0%80');

/** Path ids: random, hostile, encoded, or real (then the body is one that can never be valid). */
function pathId(real: string[], realWeight: number): fc.Arbitrary<{ id: string; real: boolean }> {
  return fc.oneof(
    {
      arbitrary: hostileString.map((s) => ({ id: encodeAny(s.slice(0, 200)) || 'x', real: false })),
      weight: 4,
    },
    { arbitrary: ENCODED_NUL_OR_SLASH.map((id) => ({ id, real: false })), weight: 1 },
    { arbitrary: fc.uuid().map((id) => ({ id, real: false })), weight: 1 },
    {
      arbitrary: fc.constantFrom(...real).map((id) => ({ id: encodeURIComponent(id), real: true })),
      weight: realWeight,
    },
  );
}

/** Plausible values for parameters the server reads by name, mixed with hostile ones. */
function valueFor(name: string, targets: Targets): fc.Arbitrary<string> {
  const plausible: Record<string, string[]> = {
    method: ['password', 'cert', 'ext-jwt', 'updb', 'ott', 'ottca', 'ca', 'PASSWORD'],
    limit: ['0', '-1', '501', '1e3', '10', 'abc', '9999999999999999'],
    offset: ['-5', '0', '1.5', '99999999999', 'x'],
    sort: ['name desc', 'name', 'nope asc', 'name sideways', '; drop', 'createdAt desc'],
    filter: [
      'name = "x"',
      'name contains "',
      'isAdmin = true and',
      'x = y',
      '((',
      'name = "a" or 1=1',
      'true',
      'status = "failed"',
      'createdAt >= "2020-01-01T00:00:00Z" and event contains "identity"',
      'createdAt > "yesterday"',
    ],
    cursor: ['1', '0', '-1', '999999999999999999', '9999999999999999999', '1e3', 'abc'],
    url: [
      'https://receiver.invalid/hook',
      'https://127.0.0.1/hook',
      'https://0x7f.1/',
      'https://[::ffff:127.0.0.1]/',
      'https://169.254.169.254/latest/meta-data/',
      'https://localhost./',
      'http://receiver.invalid/hook',
      'https://user:password@receiver.invalid/',
      'https://receiver.invalid/#fragment',
    ],
    grant_type: [
      'authorization_code',
      'refresh_token',
      'client_credentials',
      'password',
      'urn:x',
      'urn:ietf:params:oauth:grant-type:device_code',
    ],
    response_type: ['code', 'token', 'id_token', 'code id_token', ''],
    client_id: ['svc', 'other', ''],
    redirect_uri: [
      'http://127.0.0.1:54321/auth/callback',
      'http://127.0.0.1:54321/auth/callback?x=1',
      'https://evil.example/auth/callback',
      'http://localhost:abc/auth/callback',
      'javascript:alert(1)',
    ],
    scope: ['openid', 'openid offline_access', 'offline_access', 'profile', ''],
    code_challenge_method: ['S256', 'plain', 's256'],
    code_challenge: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short'],
    prompt: ['none', 'consent', 'login', 'select_account'],
    max_age: ['0', '-1', 'x'],
    token_type_hint: ['access_token', 'refresh_token', 'x'],
    authRequestId: targets.authRequestIds,
    authRequestID: targets.authRequestIds,
    id: targets.authRequestIds,
    username: ['nobody', 'hostile-user', 'ADMIN ', 'root'],
    code: targets.grantTokens.codes,
    refresh_token: targets.grantTokens.refreshTokens,
    token: targets.grantTokens.refreshTokens,
    device_code: targets.device.deviceCodes,
    user_code: targets.device.userCodes,
    confirm: ['yes', ''],
    abort: ['yes', ''],
  };
  const known = Object.hasOwn(plausible, name) ? plausible[name] : undefined;
  const hostile = fc.oneof(hostileString, badCredentialString);
  return known?.length ? fc.oneof(fc.constantFrom(...known), hostile) : hostile;
}

/** A query string with repeated, missing and hostile parameters. */
function queryString(op: Operation, targets: Targets): fc.Arbitrary<string> {
  const names = op.queryNames.length > 0 ? op.queryNames : ['x'];
  const pair = fc
    .oneof({ arbitrary: fc.constantFrom(...names), weight: 4 }, { arbitrary: hostileString, weight: 1 })
    .chain((name) => valueFor(name, targets).map((value) => [name, value] as [string, string]));
  return fc
    .tuple(fc.array(pair, { maxLength: 8 }), fc.boolean(), fc.constantFrom('', '&&', '&=', '&a', '&%'))
    .map(([pairs, duplicate, junk]) => {
      const all = duplicate && pairs.length > 0 ? [...pairs, pairs[0]!, pairs[0]!] : pairs;
      // Node refuses request lines over 16 KiB with a bare 431 before the app runs: stay under.
      const q =
        all.map(([k, v]) => `${encodeAny(k.slice(0, 100))}=${encodeAny(v.slice(0, 300))}`).join('&') + junk;
      return q ? `?${q}` : '';
    });
}

const WRONG_TYPE_CANDIDATES: unknown[] = ['definitely not valid', 3.5, true, [], { nested: {} }, null];

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Types a property schema admits, or undefined when it admits anything we cannot tell. */
function admittedTypes(schema: any): string[] | undefined {
  if (!schema) return undefined;
  if (schema.type) return [schema.type].flat();
  if (schema.enum) return [...new Set(schema.enum.map(jsonType))] as string[];
  const union = schema.anyOf ?? schema.oneOf;
  if (union) {
    const parts = union.map(admittedTypes);
    return parts.includes(undefined) ? undefined : ([...new Set(parts.flat())] as string[]);
  }
  return undefined;
}

/** A value no JSON schema of these types can take (numbers as strings count as numbers). */
function wrongValueFor(schema: any): unknown | undefined {
  const types = admittedTypes(schema);
  if (!types) return undefined;
  return WRONG_TYPE_CANDIDATES.find((v) => {
    const t = jsonType(v);
    if (t === 'integer' && types.includes('number')) return false;
    if (t === 'string' && types.some((x) => ['string', 'number', 'integer', 'boolean'].includes(x)))
      return false;
    return !types.includes(t);
  });
}

/** Properties whose value we can make wrong, required ones first. */
function poisonableProperties(schema: any): string[] {
  const props = Object.entries<any>(schema?.properties ?? {})
    .filter(([, s]) => wrongValueFor(s) !== undefined)
    .map(([n]) => n);
  const required = (schema?.required ?? []).filter((n: string) => props.includes(n));
  return required.length > 0 ? required : props;
}

/** An object shaped like the schema: hostile strings, wrong types, extra and missing members. */
function schemaShaped(schema: any, targets: Targets): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.entries<any>(schema?.properties ?? {});
  const member = ([name, s]: [string, any]) =>
    fc.option(
      fc.oneof(
        valueFor(name, targets) as fc.Arbitrary<unknown>,
        hostileJson,
        fc.constant(wrongValueFor(s) ?? null),
      ),
      { nil: undefined, freq: 3 },
    );
  return fc
    .tuple(fc.tuple(...props.map(member)), fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }))
    .map(([values, extra]) => {
      const out: Record<string, unknown> = { ...extra };
      props.forEach(([name], i) => {
        if (values[i] !== undefined) out[name] = values[i];
      });
      return out;
    });
}

/** JSON that can never be valid: one member has a type the schema refuses. */
function poisonedJson(op: Operation, targets: Targets): fc.Arbitrary<string> | undefined {
  const names = poisonableProperties(op.bodySchema);
  if (names.length === 0) return undefined;
  return fc
    .tuple(schemaShaped(op.bodySchema, targets), fc.constantFrom(...names))
    .map(([body, name]) =>
      JSON.stringify({ ...body, [name]: wrongValueFor(op.bodySchema.properties[name]) }),
    );
}

function formBody(op: Operation, targets: Targets): fc.Arbitrary<string> {
  const names = Object.keys(op.bodySchema?.properties ?? {});
  const name = names.length > 0 ? fc.oneof(fc.constantFrom(...names), hostileString) : hostileString;
  const pair = name.chain((n) => valueFor(n, targets).map((v) => [n, v] as [string, string]));
  return fc.tuple(fc.array(pair, { maxLength: 8 }), fc.boolean()).map(([pairs, duplicate]) => {
    const all = duplicate && pairs.length > 0 ? [...pairs, ...pairs] : pairs;
    return all.map(([k, v]) => `${encodeAny(k)}=${encodeAny(v)}`).join('&');
  });
}

interface Body {
  contentType?: string;
  body?: string;
}

const JSON_TYPE = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON');
const OTHER_TYPES = fc.constantFrom(
  'text/plain',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/json; charset=utf-16',
  'application/x-pem-file',
  '',
  ';;;',
  'application/x-www-form-urlencoded; charset=latin1',
);

/** PEM armour without a certificate: repeated BEGIN markers, up to most of the body limit. */
const garbagePem = fc
  .tuple(
    fc.constantFrom('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----', '-----BEGIN X-----\nAA'),
    fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 20_000, max: 34_000 })),
  )
  .map(([marker, n]) => marker.repeat(n));

/** A value of the schema's own type, when it is simple enough to tell. */
function typedValue(schema: any): unknown {
  if (schema?.enum) return schema.enum[0];
  const t = (admittedTypes(schema) ?? ['string']).filter((x) => x !== 'null')[0] ?? 'string';
  const values: Record<string, unknown> = {
    string: 'hostile-pem',
    boolean: true,
    integer: 1,
    number: 1,
    array: [],
    object: {},
  };
  return values[t];
}

/**
 * A body of the right shape whose PEM member is never a certificate: BEGIN markers and armour
 * without a body, up to most of the body limit (a parser that backtracks shows here).
 */
function pemBody(op: Operation, targets: Targets): fc.Arbitrary<string> | undefined {
  const props = Object.entries<any>(op.bodySchema?.properties ?? {});
  const pemName = props.find(([n]) => /pem$/i.test(n))?.[0];
  if (!pemName) return undefined;
  const base = Object.fromEntries(props.filter(([n]) => n !== pemName).map(([n, s]) => [n, typedValue(s)]));
  return fc
    .oneof(garbagePem, badCredentialString, hostileCertificate(targets))
    .map((pem) => JSON.stringify({ ...base, [pemName]: pem }));
}

/** Real certificates that are no CA and no client certificate (see Targets.certificatePems). */
const hostileCertificate = (targets: Targets) => fc.constantFrom(...targets.certificatePems);

/** Text no JSON parser turns into an object (a BOM may be skipped, so it counts as one). */
function isNotAnObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text.replace(/^\ufeff/, ''));
    return value === null || typeof value !== 'object' || Array.isArray(value);
  } catch {
    return true;
  }
}

/** Bodies that can never create or change a row: refused by type, parsing or validation. */
function neverValidBody(op: Operation, targets: Targets): fc.Arbitrary<Body> {
  const poisoned = poisonedJson(op, targets);
  const scalars = poisonableProperties(op.bodySchema).filter((n) => {
    const types = admittedTypes(op.bodySchema.properties[n]) ?? ['object'];
    return !types.includes('array') && !types.includes('object');
  });
  // Deep nesting where the schema takes any JSON (tags) next to a wrong member, or in a scalar.
  const deep = poisoned
    ? fc
        .tuple(poisoned, memberForDeepJson(op.bodySchema), deeplyNestedJson)
        .map(([body, name, d]) => `${body.slice(0, -1)},${JSON.stringify(`${name}`)}:${d}}`)
        .filter((b) => scalars.length > 0 || !b.startsWith('{}'))
    : deeplyNestedJson.filter((d) => !d.endsWith(']') && !d.endsWith('}'));
  const options: fc.Arbitrary<Body>[] = [
    fc.record({ contentType: JSON_TYPE, body: malformedJson.filter(isNotAnObject) }),
    fc.record({ contentType: JSON_TYPE, body: deep }),
    fc.record({ contentType: JSON_TYPE, body: deep }),
    fc.record({
      contentType: fc.constantFrom('text/plain', 'multipart/form-data; boundary=xyz', 'application/xml'),
      body: hostileString,
    }),
  ];
  const pem = pemBody(op, targets);
  if (pem) options.push(fc.record({ contentType: JSON_TYPE, body: pem }));
  // A raw PEM body (CA verification): never a certificate, up to most of the body limit, or a
  // real one that proves nothing (its CN is no verification token).
  if (op.media?.includes('text/plain')) {
    const raw = fc.record({
      contentType: fc.constantFrom('text/plain', 'application/x-pem-file'),
      body: fc.oneof(garbagePem, hostileCertificate(targets)),
    });
    options.push(raw, raw, raw);
  }
  if (poisoned)
    options.push(
      fc.record({ contentType: JSON_TYPE, body: poisoned }),
      fc.record({ contentType: JSON_TYPE, body: poisoned }),
    );
  // Never empty: an empty body is no body, which an operation whose body is optional accepts.
  return fc.oneof(...options).filter((b) => typeof b.body !== 'string' || b.body.length > 0);
}

/** Mostly members that take objects or arrays (tags, role lists): there a parser must recurse. */
function memberForDeepJson(schema: any): fc.Arbitrary<string> {
  const all = Object.keys(schema?.properties ?? {});
  const nested = all.filter((n) => {
    const types = admittedTypes(schema.properties[n]) ?? ['object'];
    return types.includes('object') || types.includes('array');
  });
  if (all.length === 0) return hostileString;
  return nested.length > 0
    ? fc.oneof(fc.constantFrom(...nested), fc.constantFrom(...all))
    : fc.constantFrom(...all);
}

/** `{"<member>": <deep>}`: nesting where the server reads a value, not in an ignored member. */
function deepMember(op: Operation): fc.Arbitrary<string> {
  return fc
    .tuple(memberForDeepJson(op.bodySchema), deeplyNestedJson)
    .map(([n, d]) => `{${JSON.stringify(n)}:${d}}`);
}

function anyBody(op: Operation, targets: Targets): fc.Arbitrary<Body> {
  const pemMedia = op.media?.includes('text/plain');
  return fc.oneof(
    { arbitrary: fc.constant({}), weight: 1 },
    {
      arbitrary: fc.record({
        contentType: JSON_TYPE,
        body: schemaShaped(op.bodySchema, targets).map((b) => JSON.stringify(b)),
      }),
      weight: 5,
    },
    {
      arbitrary: fc.record({
        contentType: JSON_TYPE,
        body: hostileJson.map((b) => JSON.stringify(b) ?? 'null'),
      }),
      weight: 1,
    },
    {
      arbitrary: fc.record({
        contentType: fc.constant('application/x-www-form-urlencoded'),
        body: formBody(op, targets),
      }),
      weight: 3,
    },
    { arbitrary: fc.record({ contentType: JSON_TYPE, body: malformedJson }), weight: 2 },
    { arbitrary: fc.record({ contentType: JSON_TYPE, body: deeplyNestedJson }), weight: 1 },
    { arbitrary: fc.record({ contentType: JSON_TYPE, body: deepMember(op) }), weight: 1 },
    {
      arbitrary: fc.record({
        contentType: pemMedia ? fc.constantFrom('text/plain', 'application/x-pem-file') : OTHER_TYPES,
        body: fc.oneof(hostileString, badCredentialString, hostileCertificate(targets)),
      }),
      weight: 2,
    },
    { arbitrary: fc.record({ body: hostileString.filter((s) => s.length > 0) }), weight: 1 },
  );
}

/** Authorization, session and other headers: garbage, repeated, or a caller's real ones. */
function headersFor(caller: Caller, targets: Targets): fc.Arbitrary<Record<string, string | string[]>> {
  const token = badCredentialString;
  const headerSafe = (s: string) => s.replace(/[^\t\x20-\x7e]/g, '?').slice(0, 4000);
  const garbage = fc.oneof(
    token.map((t) => ({ authorization: `Bearer ${headerSafe(t)}` })),
    fc
      .tuple(token, token)
      .map(([a, b]) => ({ authorization: [`Bearer ${headerSafe(a)}`, `Bearer ${headerSafe(b)}`] })),
    token.map((t) => ({ authorization: `Bearer ${headerSafe(t)}, Bearer ${headerSafe(t)}` })),
    token.map((t) => ({ authorization: `Basic ${headerSafe(t)}` })),
    fc.constant({ authorization: 'Bearer' }),
    token.map((t) => ({ 'svc-session': headerSafe(t) })),
    token.map((t) => ({ 'zt-session': headerSafe(t) })),
    hostileString.map((t) => ({
      'svc-session': headerSafe(t) || 'x',
      authorization: `Bearer ${headerSafe(t)}`,
    })),
  );
  const extra = fc.record(
    {
      accept: fc.constantFrom(
        'text/html',
        'application/json',
        '*/*',
        'image/png',
        'text/html;q=0, */*;q=0',
        '',
      ),
      'accept-language': fc.constantFrom('xx', '*', 'de-DE,de;q=0.9'),
      'x-forwarded-for': fc.constantFrom('1.2.3.4', 'garbage', '::1, 10.0.0.1'),
      origin: fc.constantFrom('https://evil.example', 'null', 'http://127.0.0.1:54321'),
    },
    { requiredKeys: [] },
  );
  const base =
    caller === 'garbage'
      ? garbage
      : caller === 'anonymous'
        ? fc.constant({})
        : fc.constant(targets.credentials[caller]);
  return fc.tuple(base, extra).map(([a, b]) => ({ ...b, ...a }));
}

/** The endpoints that issue, redeem or revoke codes and tokens (the device flow's included). */
const GRANT_ENDPOINTS = new Set(['/oidc/token', '/oidc/revoke', '/oidc/device/auth', '/oidc/device']);

/**
 * Headers for `op`; at the grant endpoints also a Host of any issuer of the listener, so real codes
 * and refresh tokens reach an issuer other than their own. Other operations draw exactly as before.
 */
function headersForOperation(
  op: Operation,
  caller: Caller,
  targets: Targets,
): fc.Arbitrary<Record<string, string | string[]>> {
  const headers = headersFor(caller, targets);
  if (!GRANT_ENDPOINTS.has(op.path)) return headers;
  return fc
    .tuple(headers, fc.option(fc.constantFrom(...targets.hosts), { nil: undefined }))
    .map(([h, host]) => (host === undefined ? h : { ...h, host }));
}

/**
 * The real ids a path parameter is aimed at: those of the collection named just before it
 * (`/webhooks/{id}/deliveries/{deliveryId}`: a webhook, then one of its deliveries), or any real id
 * when the suite holds none of that collection.
 */
function realIdsFor(op: Operation, name: string, targets: Targets): string[] {
  if (name === 'uid') return targets.authRequestIds;
  const collection = new RegExp(`/([a-z-]+)/\\{${name}\\}`).exec(op.path)?.[1] ?? '';
  return targets.ids[collection]?.length ? targets.ids[collection]! : Object.values(targets.ids).flat();
}

/** Fills `{id}` and friends; real ids only go with bodies that can never be valid. */
function fillPath(op: Operation, targets: Targets): fc.Arbitrary<{ path: string; real: boolean }> {
  const names = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant({ path: op.path, real: false });
  // A raw PEM body only reaches its parser on a real CA.
  const realWeight = op.media?.includes('text/plain') ? 12 : 3;
  return fc.tuple(...names.map((name) => pathId(realIdsFor(op, name, targets), realWeight))).map((ids) => {
    let path = op.path;
    ids.forEach((p, i) => (path = path.replace(`{${names[i]}}`, p.id)));
    return { path, real: ids.some((p) => p.real) };
  });
}

/**
 * The resume path reads the provider's signed resume cookie: none, a forged signature for a real or
 * hostile uid, or cookies of the wrong names. Other operations get none.
 */
function resumeCookie(op: Operation, targets: Targets): fc.Arbitrary<string | undefined> {
  if (!op.path.endsWith('/{uid}')) return fc.constant(undefined);
  const safe = (s: string) => s.replace(/[^\x21-\x7e]|;/g, '?').slice(0, 300);
  const uid = fc.oneof(fc.constantFrom(...targets.authRequestIds), hostileString.map(safe));
  return fc.option(
    fc.oneof(
      fc
        .tuple(uid, badCredentialString.map(safe))
        .map(([u, sig]) => `_interaction_resume=${u}; _interaction_resume.sig=${sig}`),
      uid.map((u) => `_interaction_resume=${u}`),
      badCredentialString.map((v) => `_session=${safe(v)}; _interaction=${safe(v)}`),
    ),
    { nil: undefined },
  );
}

/** One hostile request for `op` from `caller`. */
export function requestFor(op: Operation, caller: Caller, targets: Targets): fc.Arbitrary<HostileRequest> {
  return fc
    .tuple(
      fillPath(op, targets),
      queryString(op, targets),
      headersForOperation(op, caller, targets),
      fc.nat(99),
      resumeCookie(op, targets),
    )
    .chain(([filled, query, withoutCookie, dice, cookie]) => {
      const headers = cookie === undefined ? withoutCookie : { ...withoutCookie, cookie };
      // A caller who may write gets only bodies that can never be valid (no business row may appear).
      const mayWrite = op.writes && caller.startsWith('admin');
      // Subactions on a real row (disable, enable, refresh, delete) take no body to poison: skipped.
      const neverValid = poisonableProperties(op.bodySchema).length > 0 || op.media?.includes('text/plain');
      const unsafeReal = mayWrite && filled.real && (op.method === 'DELETE' || !neverValid);
      const path = unsafeReal ? op.path.replace(/\{\w+\}/g, 'no-such-id') : filled.path;
      const base = { operation: op.key, caller, method: op.method, path: path + query, headers };
      if (!op.takesBody && op.method === 'GET') return fc.constant<HostileRequest>(base);
      if (dice === 0 && op.takesBody) {
        return fc.constant<HostileRequest>({
          ...base,
          headers: { ...headers, 'content-type': 'application/json' },
          body: `{"a":"${'x'.repeat(BODY_LIMIT)}"}`,
          oversize: true,
        });
      }
      const bodies = mayWrite ? neverValidBody(op, targets) : anyBody(op, targets);
      return bodies.map(({ contentType, body }) => ({
        ...base,
        headers: contentType !== undefined ? { ...headers, 'content-type': contentType } : headers,
        ...(body !== undefined ? { body } : {}),
      }));
    })
    .chain((request) =>
      clientCertificateFor(op, targets).map((index) =>
        index === undefined ? request : { ...request, clientCertificate: index },
      ),
    );
}

/** Where a client certificate authenticates or enrolls, often one of the hostile chains. */
function clientCertificateFor(op: Operation, targets: Targets): fc.Arbitrary<number | undefined> {
  if (targets.clientCertificates === 0 || !CERTIFICATE_QUERY[op.key]) return fc.constant(undefined);
  return fc.option(fc.nat(targets.clientCertificates - 1), { nil: undefined, freq: 2 });
}

/** The operations a TLS client certificate is the credential of, with the query that says so. */
const CERTIFICATE_QUERY: Record<string, string> = {
  'POST /edge/client/v1/enroll/ca': '',
  'POST /edge/client/v1/enroll': '?method=ca',
  'POST /edge/client/v1/authenticate': '?method=cert',
};

/**
 * A well-formed request whose only credential is a hostile certificate chain, so that the
 * certificate checks are what answers (a hostile query or body is refused before them).
 */
function certificateRequest(ops: Operation[], targets: Targets): fc.Arbitrary<HostileRequest> {
  const certOps = ops.filter((op) => CERTIFICATE_QUERY[op.key] !== undefined);
  return fc
    .tuple(
      fc.constantFrom(...certOps),
      fc.nat(targets.clientCertificates - 1),
      fc.constantFrom(undefined, '{}', '{"name":"hostile-device"}'),
    )
    .map(([op, clientCertificate, body]): HostileRequest => ({
      operation: op.key,
      caller: 'anonymous' as const,
      method: op.method,
      path: op.path + CERTIFICATE_QUERY[op.key],
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body }),
      clientCertificate,
    }));
}

/** A batch of requests over every operation and caller that makes sense for it. */
export function hostileRequest(ops: Operation[], targets: Targets): fc.Arbitrary<HostileRequest> {
  const callers: Caller[] = ['anonymous', 'garbage', 'admin-session', 'admin-bearer'];
  const pairs = ops.flatMap((op) =>
    callers
      .filter((c) => !(op.skipWithValidCredentials && c.startsWith('admin')))
      .map((c) => [op, c] as const),
  );
  const any = fc.constantFrom(...pairs).chain(([op, caller]) => requestFor(op, caller, targets));
  if (targets.clientCertificates === 0) return any;
  return fc.oneof({ arbitrary: any, weight: 19 }, { arbitrary: certificateRequest(ops, targets), weight: 1 });
}
