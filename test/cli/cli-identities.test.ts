import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { mode, oneLine, startCliFixture, type CliFixture } from './cli-fixture.js';

describe('svc edge and svc keys', () => {
  let home: string;
  let svc: CliFixture['svc'];
  let api: CliFixture['api'];
  let detailByName: CliFixture['detailByName'];
  let fixture: CliFixture;
  beforeAll(async () => {
    fixture = await startCliFixture();
    ({ home, svc, api, detailByName } = fixture);
  });
  afterAll(() => fixture.close());

  describe('create identity', () => {
    test('create identity device with -o writes its ott enrollment JWT with mode 0600', async () => {
      const jwtFile = join(home, 'cli-device-1.jwt');

      const res = await svc(['edge', 'create', 'identity', 'device', 'cli-device-1', '-o', jwtFile]);

      expect(res.code).toBe(0);
      const detail = await detailByName('cli-device-1');
      expect(res.stdout).toContain(detail.id);
      expect(detail).toMatchObject({ type: 'Device', isAdmin: false });
      expect(Object.keys(detail.enrollment)).toEqual(['ott']);
      expect(mode(jwtFile)).toBe(0o600);
      const jwt = readFileSync(jwtFile, 'utf8');
      // ECDSA signatures differ on every signing: the header and claims are what must match.
      expect(decodeProtectedHeader(jwt)).toEqual(decodeProtectedHeader(detail.enrollment.ott.jwt));
      expect(decodeJwt(jwt)).toEqual(decodeJwt(detail.enrollment.ott.jwt));
      expect(decodeJwt(jwt)).toMatchObject({ sub: detail.id, em: 'ott', jti: detail.enrollment.ott.token });
    });

    test('create identity user with --updb, --external-id, --admin and --role-attributes', async () => {
      const res = await svc([
        'edge', 'create', 'identity', 'user', 'cli-user-1',
        '--updb', 'cli-user-1-login', '--external-id', 'ext-cli-user-1', '--admin', '--role-attributes', 'ops, dev',
      ]); // prettier-ignore

      expect(res.code).toBe(0);
      const detail = await detailByName('cli-user-1');
      expect(detail).toMatchObject({ type: 'User', isAdmin: true, externalId: 'ext-cli-user-1' });
      expect([...detail.roleAttributes].sort()).toEqual(['dev', 'ops']);
      expect(Object.keys(detail.enrollment)).toEqual(['updb']);
      expect(detail.enrollment.updb.username).toBe('cli-user-1-login');
    });

    test('create identity service with --no-enrollment has no enrollment; --json prints the created id', async () => {
      const res = await svc([
        'edge',
        'create',
        'identity',
        'service',
        'cli-service-1',
        '--no-enrollment',
        '--json',
      ]);

      expect(res.code).toBe(0);
      const detail = await detailByName('cli-service-1');
      expect(JSON.parse(res.stdout)).toMatchObject({ id: detail.id });
      expect(detail).toMatchObject({ type: 'Service', enrollment: {}, authenticators: {} });
    });

    test('create identity with --external-id alone still gets an ott enrollment', async () => {
      const res = await svc([
        'edge',
        'create',
        'identity',
        'device',
        'cli-device-ext',
        '--external-id',
        'ext-d',
      ]);

      expect(res.code).toBe(0);
      const detail = await detailByName('cli-device-ext');
      expect(detail.externalId).toBe('ext-d');
      expect(Object.keys(detail.enrollment)).toEqual(['ott']);
    });

    test('a duplicate name is reported with the API error code and nothing else changes', async () => {
      const before = await detailByName('cli-device-1');

      const res = await svc(['edge', 'create', 'identity', 'device', 'cli-device-1']);

      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(/^svc: .*\(CONFLICT\b/);
      const same = await api.get(`/identities?filter=${encodeURIComponent('name = "cli-device-1"')}`);
      expect(same.body.data.map((i: { id: string }) => i.id)).toEqual([before.id]);
    });

    test('create identity with --auth-policy (and -P) binds the identity to that policy', async () => {
      const policy = await api.post('/auth-policies', { name: 'cli-policy-1' });
      expect(policy.status).toBe(201);
      const policyId = policy.body.data.id as string;

      const long = await svc([
        'edge',
        'create',
        'identity',
        'user',
        'cli-policy-user',
        '--auth-policy',
        policyId,
      ]);
      const short = await svc(['edge', 'create', 'identity', 'device', 'cli-policy-device', '-P', policyId]);
      const unknown = await svc([
        'edge',
        'create',
        'identity',
        'device',
        'cli-policy-x',
        '-P',
        'no-such-policy',
      ]);

      expect(long.code).toBe(0);
      expect(short.code).toBe(0);
      expect((await detailByName('cli-policy-user')).authPolicyId).toBe(policyId);
      expect((await detailByName('cli-policy-device')).authPolicyId).toBe(policyId);
      const plain = await svc(['edge', 'create', 'identity', 'device', 'cli-policy-plain']);
      expect(plain.code).toBe(0);
      expect((await detailByName('cli-policy-plain')).authPolicyId).toBe('default');
      expect(unknown.code).toBe(1);
      expect(oneLine(unknown.stderr)).toBe(true);
      expect(unknown.stderr).toMatch(/^svc: .*\((NOT_FOUND|COULD_NOT_VALIDATE)\b.*authPolicyId/);
    });

    test.each([
      [['edge', 'create', 'identity', 'robot', 'x'], /unknown identity type "robot"/],
      [['edge', 'create', 'identity', 'device'], /usage: svc edge create identity/],
      [['edge', 'create', 'identity', 'device', 'x', '--bogus'], /Unknown option '--bogus'/],
      [['edge', 'create', 'identity', 'device', 'x', '--updb', 'u', '--no-enrollment'], /at most one of/],
      [['edge', 'frobnicate'], /unknown command "edge frobnicate"/],
    ])('bad usage %j exits 2 with one line on stderr', async (args, message) => {
      const res = await svc(args);

      expect(res.code).toBe(2);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(message);
      expect(res.stdout).toBe('');
    });
  });

  describe('list identities', () => {
    test('list with a filter prints a table of id, name, type and isAdmin', async () => {
      await svc(['edge', 'create', 'identity', 'device', 'list-me-a', '--no-enrollment']);
      await svc(['edge', 'create', 'identity', 'user', 'list-me-b', '--no-enrollment', '--admin']);
      const a = await detailByName('list-me-a');
      const b = await detailByName('list-me-b');

      const res = await svc(['edge', 'list', 'identities', 'name contains "list-me-"']);

      expect(res.code).toBe(0);
      const lines = res.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^ID\s+NAME\s+TYPE\s+IS ADMIN$/);
      const rows = lines.slice(1, -1).map((l) => l.split(/\s+/));
      expect(rows).toEqual(
        expect.arrayContaining([
          [a.id, 'list-me-a', 'Device', 'false'],
          [b.id, 'list-me-b', 'User', 'true'],
        ]),
      );
      expect(rows).toHaveLength(2);
      expect(lines.at(-1)).toBe('results: 2');
    });

    test('list --json prints the API data', async () => {
      const res = await svc(['edge', 'list', 'identities', 'name = "list-me-b"', '--json']);

      expect(res.code).toBe(0);
      const items = JSON.parse(res.stdout);
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({ name: 'list-me-b', type: 'User', isAdmin: true });
    });

    test('names with invisible characters from older rows are shown escaped, in tables and in --json', async () => {
      // Rows written before names followed PRECIS: put there directly, as an upgrade finds them.
      await svc(['edge', 'create', 'identity', 'device', 'zw-plain', '--no-enrollment']);
      await svc(['edge', 'create', 'identity', 'device', 'zw-hidden', '--no-enrollment']);
      const hidden = '\u200bzw-pla\u00adin\u{E0041}';
      await fixture.server.app.knex('identities').where({ name: 'zw-hidden' }).update({ name: hidden });
      await svc([
        'edge',
        'create',
        'identity',
        'device',
        '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645',
        '--no-enrollment',
      ]);

      const table = await svc(['edge', 'list', 'identities', 'name contains "zw-pla"']);
      expect(table.code).toBe(0);
      expect(table.stdout).toContain('\\u200bzw-pla\\u00adin\\udb40\\udc41');
      expect(table.stdout).not.toMatch(/[\u200b\u00ad]|\u{E0041}/u);

      const json = await svc(['edge', 'list', 'identities', 'name contains "zw-pla"', '--json']);
      expect(json.stdout).toContain('"\\u200bzw-pla\\u00adin\\udb40\\udc41"');
      expect(json.stdout).not.toMatch(/[\u200b\u00ad]|\u{E0041}/u);
      expect(
        JSON.parse(json.stdout)
          .map((i: { name: string }) => i.name)
          .sort(),
      ).toEqual([hidden, 'zw-plain'].sort());

      // A ZWNJ between Persian letters is part of the name, and shown as it is.
      const persian = await svc(['edge', 'list', 'identities', 'name contains "\u062e\u0648"']);
      expect(persian.stdout).toContain('\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645');
    });

    test('a bad filter is reported with the field the API names', async () => {
      const res = await svc(['edge', 'list', 'identities', 'name ~ 3']);

      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(/COULD_NOT_VALIDATE, filter:/);
    });
  });

  describe('delete', () => {
    test('delete enrollments --identity removes the default ott enrollment', async () => {
      await svc(['edge', 'create', 'identity', 'device', 'cli-rule-7']);
      const before = await detailByName('cli-rule-7');
      expect(Object.keys(before.enrollment)).toEqual(['ott']);

      const res = await svc(['edge', 'delete', 'enrollments', '--identity', before.id]);

      expect(res.code).toBe(0);
      expect(res.stdout).toContain(before.enrollment.ott.id);
      expect((await detailByName('cli-rule-7')).enrollment).toEqual({});
      const left = await api.get(`/enrollments?filter=${encodeURIComponent(`identityId = "${before.id}"`)}`);
      expect(left.body.data).toEqual([]);
    });

    test('delete enrollments --identity of an unknown identity fails with NOT_FOUND', async () => {
      const res = await svc(['edge', 'delete', 'enrollments', '--identity', 'no-such-identity']);

      expect(res.code).toBe(1);
      expect(oneLine(res.stderr)).toBe(true);
      expect(res.stderr).toMatch(/NOT_FOUND/);
    });

    test('delete enrollment <id> removes that one enrollment', async () => {
      await svc(['edge', 'create', 'identity', 'user', 'cli-del-enr', '--updb', 'cli-del-enr-login']);
      const before = await detailByName('cli-del-enr');

      const res = await svc(['edge', 'delete', 'enrollment', before.enrollment.updb.id]);

      expect(res.code).toBe(0);
      expect((await detailByName('cli-del-enr')).enrollment).toEqual({});
    });

    test('delete identity by name removes it; by id too', async () => {
      await svc(['edge', 'create', 'identity', 'device', 'cli-doomed-1']);
      await svc(['edge', 'create', 'identity', 'device', 'cli-doomed-2']);
      const one = await detailByName('cli-doomed-1');
      const two = await detailByName('cli-doomed-2');

      const byName = await svc(['edge', 'delete', 'identity', 'cli-doomed-1']);
      const byId = await svc(['edge', 'delete', 'identity', two.id]);

      expect(byName.code).toBe(0);
      expect(byId.code).toBe(0);
      expect((await api.get(`/identities/${one.id}`)).status).toBe(404);
      expect((await api.get(`/identities/${two.id}`)).status).toBe(404);
    });

    test('delete identity of an unknown name exits 1 with one line on stderr', async () => {
      const res = await svc(['edge', 'delete', 'identity', 'nobody-by-this-name']);

      expect(res.code).toBe(1);
      expect(res.stderr).toBe('svc: no identity is named "nobody-by-this-name" or has that id\n');
    });
  });

  describe('keys rotate', () => {
    test('keys rotate publishes a new signing key that GET /keys lists', async () => {
      const before = (await api.get('/keys')).body.data.map((k: { kid: string }) => k.kid);

      const res = await svc(['keys', 'rotate', '--json']);

      expect(res.code).toBe(0);
      const rotated = JSON.parse(res.stdout);
      expect(before).not.toContain(rotated.kid);
      const after = (await api.get('/keys')).body.data;
      expect(after).toEqual(expect.arrayContaining([expect.objectContaining({ kid: rotated.kid })]));
      const plain = await svc(['keys', 'rotate']);
      expect(plain.code).toBe(0);
      expect(plain.stdout).toMatch(/^New signing key \S+ .*published/);
    });
  });
});
