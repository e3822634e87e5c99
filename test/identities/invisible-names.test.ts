import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { generateRootCa } from '../../src/crypto/pki.js';
import { username as usernameField } from '../../src/schemas/identity-schemas.js';
import { nameProblem, trimSpaces } from '../../src/schemas/name-rules.js';
import { precisProblem } from '../../src/schemas/precis.js';
import { invisibleText } from '../hostile/hostile-values.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createIdentity, identityDetail, managementApi, type ManagementApi } from './identity-fixtures.js';

/** Names that would show as `alice` (or as `x`) in a table: each hides a default-ignorable code point. */
const INVISIBLE = [
  '\u200balice',
  'al\u00adice',
  '\ufeffx',
  'alice\u{E0041}\u{E0042}',
  'al\u2060ice',
  'al\u2061ice',
  'al\u2062ice',
  'al\u2063ice',
  'al\u2064ice',
];
// "I want" in Persian: the ZWNJ sits between two dual-joining letters (RFC 5892 A.1).
const PERSIAN = '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645';
// Devanagari KSSA with an explicit half form: ZWJ after a virama (RFC 5892 A.2).
const DEVANAGARI = '\u0915\u094d\u200d\u0937';
/** Names that read as `alice bob` or `alice` beside it: other spaces, blank braille, stray marks. */
const BLANK_OR_STRAY = [
  'alice\u00a0bob',
  'alice\u2003bob',
  'alice\u3000bob',
  'alice  bob',
  '\u2800alice',
  'alice\u2800',
  'alice\u1039',
  '\u0301alice',
];
/** Usernames that read as `admin`: one Cyrillic or Greek letter, an invisible stacker, a trailing joiner. */
const LOOKALIKE_USERNAMES = [
  '\u0430dmin',
  '\u03b1dmin',
  'admin\u1039',
  'admin\u094d\u200d',
  'admin\u094d',
  'admin\u2800',
  '\u0301admin',
];

describe('names and usernames refuse invisible characters (PRECIS, RFC 8264)', () => {
  let server: TestServer;
  let api: ManagementApi;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}-${++counter}`;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const expectRefused = (res: { status: number; body: any }, field: string) => {
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
  };

  test.each(INVISIBLE)('identity name %j is 400 on field name', async (name) => {
    expectRefused(await api.post('/identities', { body: { name, isAdmin: false } }), 'name');
  });

  test.each(INVISIBLE)(
    'username %j is 400 on its field, at identity create and at POST /enrollments',
    async (username) => {
      const created = await api.post('/identities', {
        body: { name: fresh('u'), isAdmin: false, enrollment: { updb: username } },
      });
      expectRefused(created, 'enrollment.updb');
      const identityId = await createIdentity(api, { name: fresh('u'), isAdmin: false });
      expectRefused(
        await api.post('/enrollments', { body: { method: 'updb', identityId, username } }),
        'username',
      );
    },
  );

  test('auth policy, signer and CA names refuse them too', async () => {
    const certPem = (await generateRootCa({ commonName: 'invisible root' })).certPem;
    for (const name of INVISIBLE) {
      expectRefused(await api.post('/auth-policies', { body: { name } }), 'name');
      const signer = {
        name,
        issuer: `https://${fresh('i')}.example`,
        audience: 'svc',
        jwksEndpoint: 'https://x.example/jwks',
      };
      expectRefused(await api.post('/external-jwt-signers', { body: signer }), 'name');
      expectRefused(await api.post('/cas', { body: { name, certPem } }), 'name');
    }
  });

  test('a username as long as the body is 400 on its field, whatever its characters (not 500)', async () => {
    // U+30FB is allowed beside kana: its rule looks at every other code point of the string.
    for (const username of [`\u30a2\u30fb${'a'.repeat(200_000)}`, `\u30a2${'\u30fb'.repeat(50_000)}`]) {
      const identityId = await createIdentity(api, { name: fresh('long'), isAdmin: false });
      expectRefused(
        await api.post('/enrollments', { body: { method: 'updb', identityId, username } }),
        'username',
      );
    }
  });

  test('a ZWNJ or ZWJ where Persian or Indic writing needs it is kept in a name', async () => {
    for (const name of [PERSIAN, DEVANAGARI]) {
      const id = await createIdentity(api, { name, isAdmin: false });
      expect((await identityDetail(api, id)).name).toBe(name);
    }
    const policy = await api.post('/auth-policies', { body: { name: `${PERSIAN} policy` } });
    expect(policy.status).toBe(201);
  });

  test('a ZWNJ or ZWJ out of its context, and a name not in NFC, are refused', async () => {
    for (const name of ['ali\u200cce', '\u200cx', 'a\u200db', `${PERSIAN.slice(0, 2)}\u200c`, 'Jose\u0301']) {
      expectRefused(await api.post('/identities', { body: { name, isAdmin: false } }), 'name');
    }
    // Joiners are never part of a username (IdentifierClass still allows them in context, but
    // a Latin username has none).
    const body = { name: fresh('u'), isAdmin: false, enrollment: { updb: 'bo\u200cb' } };
    expectRefused(await api.post('/identities', { body }), 'enrollment.updb');
  });

  test('usernames stay case-sensitive and may be any letters and ASCII punctuation', async () => {
    for (const updb of ['Alice.Example@corp', 'alice.example@corp', 'jörg']) {
      const res = await api.post('/identities', {
        body: { name: fresh('c'), isAdmin: false, enrollment: { updb } },
      });
      expect(res.status).toBe(201);
    }
  });

  test('generated names with invisible pieces: 201 exactly when the name rule allows them, else 400 on name', async () => {
    const samples = fc.sample(invisibleText, { seed: 7, numRuns: 120 });
    const outcomes = [];
    for (const [i, text] of samples.entries()) {
      const name = `${i}-${text}`;
      const res = await api.post('/identities', { body: { name, isAdmin: false } });
      const expected = nameProblem(name) ? 400 : 201;
      outcomes.push({ name, status: res.status, field: res.body.error?.cause?.field ?? 'name' });
      expect({ name, status: res.status }).toEqual({ name, status: expected });
    }
    expect(outcomes.every((o) => o.field === 'name')).toBe(true);
    // Both outcomes occur: the generator reaches names that pass and names that do not.
    expect(new Set(outcomes.map((o) => o.status))).toEqual(new Set([201, 400]));
  });

  test('a row stored under the older rule stays readable and a PUT or PATCH repeating its name is accepted', async () => {
    const id = await createIdentity(api, { name: fresh('legacy'), isAdmin: false });
    const legacy = `\u200b${fresh('legacy')}`;
    await server.app.knex('identities').where({ id }).update({ name: legacy });

    expect((await identityDetail(api, id)).name).toBe(legacy);
    const put = await api.put(`/identities/${id}`, {
      body: { name: legacy, isAdmin: false, roleAttributes: ['r'] },
    });
    expect(put.status).toBe(200);
    const patch = await api.patch(`/identities/${id}`, { body: { name: legacy, externalId: fresh('ext') } });
    expect(patch.status).toBe(200);
    expect(await identityDetail(api, id)).toMatchObject({ name: legacy, roleAttributes: ['r'] });

    // A different invisible name is a change, and checked.
    expectRefused(await api.patch(`/identities/${id}`, { body: { name: `${legacy}\u200b` } }), 'name');

    const policy = await api.post('/auth-policies', { body: { name: fresh('legacy-policy') } });
    const policyId = policy.body.data.id as string;
    await server.app.knex('auth_policies').where({ id: policyId }).update({ name: legacy });
    expect((await api.put(`/auth-policies/${policyId}`, { body: { name: legacy } })).status).toBe(200);
    expect((await api.patch(`/auth-policies/${policyId}`, { body: { name: legacy } })).status).toBe(200);
  });

  test.each(BLANK_OR_STRAY)('identity name %j is 400 on field name, on create and on PATCH', async (name) => {
    expectRefused(await api.post('/identities', { body: { name, isAdmin: false } }), 'name');
    const id = await createIdentity(api, { name: fresh('spaces'), isAdmin: false });
    expectRefused(await api.patch(`/identities/${id}`, { body: { name } }), 'name');
    expectRefused(await api.post('/auth-policies', { body: { name } }), 'name');
  });

  test('spaces of any kind around a name are dropped, not kept or refused', async () => {
    const name = fresh('edges');
    const id = await createIdentity(api, { name: ` \u00a0${name}\u3000`, isAdmin: false });
    expect((await identityDetail(api, id)).name).toBe(name);
  });

  test('names keep single U+0020 spaces, conjuncts and letters of any script, mixed or not', async () => {
    for (const name of [
      `alice bob ${fresh('x')}`,
      `\u0915\u094d\u0937 ${fresh('x')}`,
      `\u0430lice-${fresh('x')}`,
      `\u1000\u1039\u1000-${fresh('x')}`,
    ]) {
      const id = await createIdentity(api, { name, isAdmin: false });
      expect((await identityDetail(api, id)).name).toBe(name);
    }
  });

  test.each(LOOKALIKE_USERNAMES)(
    'username %j is 400 on its field, at identity create and at POST /enrollments',
    async (username) => {
      const created = await api.post('/identities', {
        body: { name: fresh('look'), isAdmin: false, enrollment: { updb: username } },
      });
      expectRefused(created, 'enrollment.updb');
      expect(created.body.error.cause.reason).not.toContain(username);
      const identityId = await createIdentity(api, { name: fresh('look'), isAdmin: false });
      expectRefused(
        await api.post('/enrollments', { body: { method: 'updb', identityId, username } }),
        'username',
      );
    },
  );

  test('usernames all in one script, Cyrillic, Greek or Devanagari with its conjuncts, are accepted', async () => {
    for (const updb of [
      '\u0430\u0434\u043c\u0438\u043d',
      '\u03b4\u03b9\u03b1',
      '\u0915\u094d\u0937\u0924\u094d\u0930',
      'anna-1.x',
    ]) {
      const res = await api.post('/identities', {
        body: { name: fresh('script'), isAdmin: false, enrollment: { updb } },
      });
      expect({ updb, status: res.status }).toEqual({ updb, status: 201 });
    }
  });

  test('a name stored with a no-break space stays readable and a PUT repeating it is accepted', async () => {
    const id = await createIdentity(api, { name: fresh('nbsp'), isAdmin: false });
    const legacy = `${fresh('nbsp')}\u00a0x`;
    await server.app.knex('identities').where({ id }).update({ name: legacy });
    expect((await identityDetail(api, id)).name).toBe(legacy);
    const put = await api.put(`/identities/${id}`, { body: { name: legacy, isAdmin: false } });
    expect(put.status).toBe(200);
  });
});

describe('the PRECIS and space rules read a long string once', () => {
  test('a username over 255 characters is refused by its length alone: the PRECIS rules never run', () => {
    // A zero-width space the PRECIS rule would name in its own issue, if it ran.
    const result = usernameField.safeParse(`${'a'.repeat(300)}\u200b`);
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((issue) => issue.code)).toEqual(['too_big']);
  });

  test('U+30FB and Arabic-Indic digits are judged on the whole string, however long', () => {
    // Beside kana U+30FB is allowed; the string is far longer than a call's argument list may be.
    expect(precisProblem(`\u30a2\u30fb${'a'.repeat(200_000)}`, 'identifier')).toBeUndefined();
    expect(precisProblem(`\u30a2${'\u30fb'.repeat(50_000)}`, 'identifier')).toBeUndefined();
    expect(precisProblem(`a${'\u30fb'.repeat(50_000)}`, 'identifier')).toContain('U+30FB');
    expect(precisProblem('\u0660'.repeat(50_000), 'identifier')).toBeUndefined();
    expect(precisProblem(`${'\u0660'.repeat(50_000)}\u06f0`, 'identifier')).toContain('U+0660');
    expect(precisProblem(`\u06f0${'\u0660'.repeat(50_000)}`, 'identifier')).toContain('U+06F0');
  });

  test('trimSpaces drops spaces at both ends only, and keeps a long inner run', () => {
    expect(trimSpaces('\u3000 \u00a0alice bob\u2003 ')).toBe('alice bob');
    expect(trimSpaces('\ufeffalice ')).toBe('\ufeffalice');
    expect(trimSpaces(' \u00a0 ')).toBe('');
    expect(trimSpaces('')).toBe('');
    const inner = `a${' '.repeat(100_000)}b`;
    expect(trimSpaces(`  ${inner}\u3000`)).toBe(inner);
  });
});
