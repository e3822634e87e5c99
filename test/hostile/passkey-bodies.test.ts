import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TestResponse } from '../helpers/https-client.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { cbor, type SoftAuthenticator } from '../helpers/soft-authenticator.js';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { browserLike, csrfOf, signIn } from '../account/account-fixtures.js';
import { CLIENT, enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';
import { passwordStep } from '../passkey-login/passkey-login-fixtures.js';
import {
  namedSite,
  PASSKEYS,
  passkeyApi,
  registerPasskey,
  softAuthenticatorFor,
} from '../passkeys/passkey-fixtures.js';
import { createPolicy } from '../second-factors/factor-fixtures.js';
import { BODY_LIMIT, type HostileRequest } from './hostile-requests.js';
import { edgeOperations, oidcOperations, type Operation } from './operations.js';
import { responseProblems } from './response-checks.js';

type Json = Record<string, any>;

/** Where a member of a WebAuthn response sits: `['response', 'clientDataJSON']`. */
type MemberPath = string[];

const b64u = (bytes: Buffer | Uint8Array | string) => Buffer.from(bytes).toString('base64url');

/** CBOR that no attestation object (or authenticator data) parser should take, nor choke on. */
const GARBAGE_CBOR: [string, string][] = [
  ['random bytes', b64u(Buffer.from('b1e2c3d4e5f60718293a4b5c6d7e8f90', 'hex'))],
  ['an empty map', b64u(Buffer.from([0xa0]))],
  ['a map whose fmt is a number', b64u(cbor({ fmt: 1, attStmt: {}, authData: new Uint8Array(0) }))],
  ['authData too short', b64u(cbor({ fmt: 'none', attStmt: {}, authData: new Uint8Array(10) }))],
  ['packed without a statement', b64u(cbor({ fmt: 'packed', attStmt: {}, authData: new Uint8Array(37) }))],
  ['an unterminated indefinite array', b64u(Buffer.from([0x9f, 0x01, 0x02]))],
  [
    'a byte string claiming 2^64 bytes',
    b64u(Buffer.from([0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])),
  ],
  ['arrays nested 10,000 deep', b64u(Buffer.concat([Buffer.alloc(10_000, 0x81), Buffer.from([0x00])]))],
  ['a map claiming 2^32 pairs', b64u(Buffer.from([0xba, 0xff, 0xff, 0xff, 0xff]))],
  [
    '37 zero bytes with the extension flag',
    b64u(Buffer.concat([Buffer.alloc(32), Buffer.from([0x85]), Buffer.alloc(4)])),
  ],
];

/** base64url members with characters base64url does not have. */
const BAD_BASE64URL = ['ab+/cd==', 'ab cd', 'a!b', '\u00e9t\u00e9', '====', 'AA=A', '%41%41', 'AA\u0000'];

/** Values of the wrong JSON type for a member that takes a string (or an object, for `response`). */
const WRONG_TYPES: unknown[] = [7, true, null, [], { a: 1 }];
const WRONG_FOR_OBJECTS: unknown[] = ['x', 7, [], null];
const WRONG_FOR_ARRAYS: unknown[] = ['x', 7, [{}], null];

function withMember(value: Json, path: MemberPath, member: unknown): Json {
  const copy = structuredClone(value);
  let at: Json = copy;
  for (const key of path.slice(0, -1)) at = at[key];
  at[path.at(-1)!] = member;
  return copy;
}

/** The members of a WebAuthn response the controller reads. */
function membersOf(kind: 'create' | 'get'): {
  strings: MemberPath[];
  objects: MemberPath[];
  binary: MemberPath[];
} {
  const binary =
    kind === 'create'
      ? [
          ['response', 'clientDataJSON'],
          ['response', 'attestationObject'],
        ]
      : [
          ['response', 'clientDataJSON'],
          ['response', 'authenticatorData'],
          ['response', 'signature'],
          ['response', 'userHandle'],
        ];
  return {
    strings: [['id'], ['rawId'], ['type'], ['authenticatorAttachment'], ...binary],
    objects: [
      ['response'],
      ['clientExtensionResults'],
      ...(kind === 'create' ? [['response', 'transports']] : []),
    ],
    binary: [['id'], ['rawId'], ...binary],
  };
}

/** A fresh ceremony's real answer, and forgeries of it (see `forgeries`). */
interface Fresh {
  real: Json;
  forged: [string, Json][];
}

/** One hostile WebAuthn response, named for the report, made from a fresh ceremony's answers. */
interface Variant {
  what: string;
  make: (fresh: Fresh) => unknown;
  /** Reaches past the schema (a parser, the challenge, the signature): needs a ceremony of its own. */
  deep?: boolean;
  /** Over the body limit: 413 expected. */
  oversize?: boolean;
}

/**
 * Every hostile shape of a real response: garbage CBOR, a huge clientDataJSON (over and just under
 * the body limit), wrong types and unknown members, base64url with characters it does not have,
 * and a well-formed clientDataJSON of the wrong type, challenge or origin (signed where it is).
 * Unknown members go with the wrong challenge: beside a valid answer they are rightly ignored.
 */
function variants(kind: 'create' | 'get'): Variant[] {
  const out: Variant[] = [];
  const set = (path: MemberPath, value: unknown) => (f: Fresh) => withMember(f.real, path, value);
  const cborMember =
    kind === 'create' ? ['response', 'attestationObject'] : ['response', 'authenticatorData'];
  for (const [what, value] of GARBAGE_CBOR)
    out.push({ what: `${cborMember[1]}: ${what}`, make: set(cborMember, value), deep: true });
  const clientData = ['response', 'clientDataJSON'];
  out.push({
    what: 'clientDataJSON of 1 MiB',
    make: set(clientData, 'A'.repeat(BODY_LIMIT)),
    oversize: true,
  });
  out.push({
    what: 'clientDataJSON just under the body limit',
    make: set(clientData, 'A'.repeat(BODY_LIMIT - 4096)),
  });
  const { strings, objects, binary } = membersOf(kind);
  for (const path of strings)
    for (const wrong of WRONG_TYPES)
      out.push({ what: `${path.join('.')} = ${JSON.stringify(wrong)}`, make: set(path, wrong) });
  for (const path of objects)
    for (const wrong of path.at(-1) === 'transports' ? WRONG_FOR_ARRAYS : WRONG_FOR_OBJECTS)
      out.push({ what: `${path.join('.')} = ${JSON.stringify(wrong)}`, make: set(path, wrong) });
  for (const path of binary)
    for (const bad of BAD_BASE64URL)
      out.push({ what: `${path.join('.')} = ${JSON.stringify(bad)}`, make: set(path, bad) });
  const wrongChallenge = (f: Fresh) => f.forged.find(([what]) => what === 'another challenge')![1];
  out.push({
    what: 'unknown members',
    make: (f) => ({ ...wrongChallenge(f), isAdmin: true, ['__proto__']: { isAdmin: true } }),
    deep: true,
  });
  out.push({
    what: 'an unknown member in response',
    make: (f) => withMember(wrongChallenge(f), ['response', 'extra'], { deep: [1] }),
    deep: true,
  });
  out.push({ what: 'the response as a string of garbage', make: () => '{"id":' });
  out.push({ what: 'the response as an array', make: (f) => [f.real] });
  for (const what of ['the wrong type', 'another challenge', 'another origin'])
    out.push({
      what: `clientDataJSON with ${what}`,
      make: (f) => f.forged.find(([w]) => w === what)![1],
      deep: true,
    });
  return out;
}

/** The forgeries an authenticator signs properly: only clientDataJSON says the wrong thing. */
async function forgeries(
  authenticator: SoftAuthenticator,
  kind: 'create' | 'get',
  options: Json,
): Promise<[string, Json][]> {
  const answer = (o: Parameters<SoftAuthenticator['assert']>[1]) =>
    kind === 'create' ? authenticator.register(options, o) : authenticator.assert(options, o);
  return [
    ['the wrong type', await answer({ type: kind === 'create' ? 'webauthn.get' : 'webauthn.create' })],
    ['another challenge', await answer({ challenge: b64u('not the challenge of this ceremony') })],
    ['another origin', await answer({ origin: 'https://evil.example' })],
  ];
}

/** One passkey endpoint, how to open a ceremony there, and how to send it a body. */
interface Target {
  op: Operation;
  kind: 'create' | 'get';
  /** Opens a ceremony: the options a browser would pass to navigator.credentials. */
  options(): Promise<Json>;
  /** Sends `response` in the endpoint's body (with `members` beside it, or instead of it). */
  send(body: string, deep?: boolean): Promise<TestResponse>;
  /** The body around a response. */
  body(response: unknown): Json;
  /** Who answers an assertion: the authenticator of the passkey the ceremony expects. */
  authenticator?: () => SoftAuthenticator;
  /** Members of the body beside the response, and their wrong types. */
  siblings: string[];
}

describe(`hostile WebAuthn bodies at every passkey endpoint (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  let server: TestServer;
  let targets: Target[];
  let passkeysBefore: number;
  let origin: string;
  /** The authenticator of the identity's one passkey: its assertions pass every check but the one broken. */
  let ownerAuthenticator: SoftAuthenticator;

  beforeAll(async () => {
    server = await startTestServer();
    const admin = managementApi(server, await server.adminToken());
    const docs = await Promise.all(
      ['client', 'management'].map(async (api) => (await server.client.get(`/edge/${api}/v1/spec`)).body),
    );
    const ops = new Map([...docs.flatMap(edgeOperations), ...oidcOperations()].map((op) => [op.key, op]));
    const opOf = (key: string) => {
      const op = ops.get(key);
      if (!op) throw new Error(`no operation ${key}`);
      return op;
    };
    const site = namedSite(server);
    const { client } = site;
    origin = site.origin;
    const json = { 'content-type': 'application/json', accept: 'application/json' };

    // An identity with a passkey on the Edge API (its passwordless assertions).
    const owner = await enrolledUpdbUser(server, admin, 'hostile-pk-owner');
    ownerAuthenticator = softAuthenticatorFor(origin);
    await registerPasskey(passkeyApi(client, owner.token), ownerAuthenticator);
    // The Edge registrations are another identity's, whose session owes nothing.
    const registrar = await enrolledUpdbUser(server, admin, 'hostile-pk-registrar');
    const session = { ...json, 'svc-session': registrar.token };
    const requiring = await createPolicy(admin, 'hostile-pk-required', {
      secondary: { requirePasskey: true },
    });
    // Legacy sessions that owe a passkey (their policy requires one), of identities that have one:
    // several, since each identity's refused second factors are limited (past that, 429 answers).
    const owing: { headers: Record<string, string>; authenticator: SoftAuthenticator }[] = [];
    for (let i = 0; i < 6; i++) {
      const who = await enrolledUpdbUser(server, admin, `hostile-pk-owing-${i}`);
      const authenticator = softAuthenticatorFor(origin);
      await registerPasskey(passkeyApi(client, who.token), authenticator);
      const moved = await admin.patch(`/identities/${who.id}`, { body: { authPolicyId: requiring } });
      expect(moved.status).toBe(200);
      const pending = await client.post(`${CLIENT}/authenticate?method=password`, {
        body: { username: who.username, password: who.password },
      });
      expect(pending.body.data.authQueries).toEqual([expect.objectContaining({ isPasskeyRegistered: true })]);
      owing.push({ headers: { ...json, 'svc-session': pending.body.data.token as string }, authenticator });
    }
    /**
     * Each new MFA ceremony (a case that reaches the verifier) goes to the next of sessions 1-5;
     * the cases the schema refuses go to session 0, whose limit they may well exhaust.
     */
    let turn = 0;
    const mfa = () => owing[1 + (turn % (owing.length - 1))]!;
    // An identity the login owes a passkey registration to (the same policy, no passkey yet).
    const newcomer = await enrolledUpdbUser(server, admin, 'hostile-pk-newcomer', {
      authPolicyId: requiring,
    });
    const newcomerLogin = await passwordStep(client, { ...newcomer, name: newcomer.username });
    const registering = newcomerLogin.started.authRequestId;
    const passwordless = (await startAuthorization(client, { method: 'passkey' })).authRequestId;
    // The account page of a third identity, signed in with its password.
    const visitor = await enrolledUpdbUser(server, admin, 'hostile-pk-visitor');
    const browser = browserLike({ baseUrl: origin, ca: server.ca });
    await signIn(browser, visitor.username, visitor.password);
    const csrf = csrfOf((await browser.get('/account/')).text);
    const account = () => ({
      ...json,
      cookie: [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; '),
      origin,
      'x-csrf-token': csrf,
    });
    const accountOp = (path: string): Operation => ({
      key: `POST ${path}`,
      method: 'POST',
      path,
      queryNames: [],
      errorShape: 'edge',
      writes: true,
      takesBody: true,
    });

    const ok = (res: TestResponse, what: string) => {
      if (res.status !== 200) throw new Error(`${what}: ${res.status} ${res.text}`);
      return res.body;
    };
    targets = [
      {
        op: opOf(`POST ${CLIENT}${'/current-identity/passkeys'}`),
        kind: 'create',
        options: async () =>
          ok(await client.post(`${PASSKEYS}/options`, { headers: session, body: {} }), 'options').data
            .options,
        send: (body) => client.post(PASSKEYS, { headers: session, body }),
        body: (response) => ({ name: 'hostile', response }),
        siblings: ['name', 'password', 'code'],
      },
      {
        op: opOf(`POST ${CLIENT}/authenticate`),
        kind: 'get',
        options: async () => {
          const ceremony = ok(
            await client.post(`${CLIENT}/authenticate/passkey/options`, { headers: json }),
            'legacy options',
          ).data;
          lastCeremonyId = ceremony.ceremonyId;
          return ceremony.options;
        },
        send: (body) => client.post(`${CLIENT}/authenticate?method=passkey`, { headers: json, body }),
        body: (response) => ({ ceremonyId: lastCeremonyId, passkey: response }),
        siblings: ['ceremonyId', 'configTypes'],
      },
      {
        op: opOf('POST /oidc/login/passkey'),
        kind: 'get',
        options: async () =>
          ok(
            await client.get(`/oidc/login/passkey?authRequestID=${passwordless}`, { headers: json }),
            'login options',
          ),
        send: (body) => client.post('/oidc/login/passkey', { headers: json, body }),
        body: (response) => ({ authRequestId: passwordless, passkey: response }),
        siblings: ['authRequestId', 'configTypes'],
      },
      {
        op: opOf('POST /oidc/login/passkey/register'),
        kind: 'create',
        options: async () =>
          ok(
            await client.get(`/oidc/login/passkey/register?authRequestID=${registering}`, { headers: json }),
            'register options',
          ),
        send: (body) => client.post('/oidc/login/passkey/register', { headers: json, body }),
        body: (response) => ({ authRequestId: registering, name: 'hostile', passkey: response }),
        siblings: ['authRequestId', 'name'],
      },
      {
        op: accountOp('/account/passkeys/register'),
        kind: 'create',
        options: async () =>
          ok(
            await browser.client.post('/account/passkeys/options', { headers: account(), body: {} }),
            'account options',
          ).data.options,
        send: (body) => browser.client.post('/account/passkeys/register', { headers: account(), body }),
        body: (response) => ({ name: 'hostile', response }),
        siblings: ['name'],
      },
      // Last: its refusals count against the identity, which may lock its second factor.
      {
        op: opOf(`POST ${CLIENT}/authenticate/mfa`),
        kind: 'get',
        options: async () => {
          turn++;
          const answer = await client.post(`${CLIENT}/authenticate/mfa/passkey/options`, {
            headers: mfa().headers,
          });
          return ok(answer, 'mfa options').data.options;
        },
        authenticator: () => mfa().authenticator,
        send: (body, deep) =>
          client.post(`${CLIENT}/authenticate/mfa`, { headers: (deep ? mfa() : owing[0]!).headers, body }),
        body: (response) => ({ passkey: response }),
        siblings: ['code'],
      },
    ];
    passkeysBefore = Number((await server.app.knex('passkeys').count('* as n'))[0]!.n);
  });
  afterAll(() => server?.close());

  /** The legacy passwordless ceremony the last options opened. */
  let lastCeremonyId = '';

  test('every hostile response and body member is a 4xx in the documented envelope; no passkey appears', async () => {
    const failures: string[] = [];
    let sent = 0;
    for (const target of targets) {
      /** A new ceremony and its answers: by a new authenticator, or the owner's for an assertion. */
      const fresh = async (): Promise<Fresh> => {
        const options = await target.options();
        if (!options) throw new Error(`no options at ${target.op.key}`);
        const authenticator =
          target.kind === 'create'
            ? softAuthenticatorFor(origin)
            : (target.authenticator?.() ?? ownerAuthenticator);
        const real =
          target.kind === 'create'
            ? await authenticator.register(options)
            : await authenticator.assert(options);
        return { real, forged: await forgeries(authenticator, target.kind, options) };
      };
      let shared = await fresh();
      const cases: {
        what: string;
        body: () => Promise<Json | unknown[]>;
        oversize?: boolean;
        deep?: boolean;
      }[] = variants(target.kind).map((v) => ({
        what: v.what,
        oversize: v.oversize,
        deep: v.deep,
        body: async () => target.body(v.make(v.deep ? (shared = await fresh()) : shared)),
      }));
      // The members beside the response, with wrong types, and unknown ones beside them.
      for (const sibling of target.siblings)
        for (const wrong of WRONG_TYPES)
          cases.push({
            what: `${sibling} = ${JSON.stringify(wrong)}`,
            // With the wrong challenge: a member the endpoint may ignore must not let a valid answer in.
            body: async () => ({ ...target.body(shared.forged[1]![1]), [sibling]: wrong }),
          });
      cases.push({
        what: 'an unknown body member',
        deep: true,
        body: async () => {
          shared = await fresh();
          return { ...target.body(shared.forged[1]![1]), isAdmin: true };
        },
      });
      cases.push({ what: 'the body as an array', body: async () => [target.body(shared.real)] });

      for (const c of cases) {
        const body = JSON.stringify(await c.body());
        sent++;
        const res = await target.send(body, c.deep);
        const request: HostileRequest = {
          operation: target.op.key,
          caller: 'anonymous',
          method: 'POST',
          path: target.op.path,
          headers: { accept: 'application/json' },
          body,
        };
        const problems = responseProblems(target.op, request, res);
        if (res.status < 400 || res.status >= 500) problems.push(`status ${res.status}`);
        if (c.oversize && res.status !== 413) problems.push(`oversize body answered ${res.status}`);
        if (problems.length > 0)
          failures.push(
            `${target.op.key} with ${c.what}: ${problems.join('; ')}\n  ${res.text.slice(0, 300)}`,
          );
      }
    }
    const passkeysAfter = Number((await server.app.knex('passkeys').count('* as n'))[0]!.n);
    expect(failures).toEqual([]);
    expect(passkeysAfter).toBe(passkeysBefore);
    expect(sent).toBeGreaterThan(targets.length * 80);
  }, 300_000);
});
