import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { oneLine, startCliFixture, type CliFixture } from './cli-fixture.js';
import { runSvcInTerminal } from './run-svc.js';

describe('svc edge import identities, tables, completion', () => {
  let fixture: CliFixture;
  let svc: CliFixture['svc'];
  let home: string;
  beforeAll(async () => {
    fixture = await startCliFixture();
    ({ svc, home } = fixture);
  }, 180_000);
  afterAll(() => fixture.close());

  const writeHome = (name: string, content: string) => {
    const path = join(home, name);
    writeFileSync(path, content);
    return path;
  };

  test('a CSV import creates the good rows and reports each failed row by number, name and code', async () => {
    expect((await fixture.api.post('/identities', { name: 'imp-taken', isAdmin: false })).status).toBe(201);
    const file = writeHome(
      'people.csv',
      [
        'name,type,isAdmin,updb,roleAttributes,enrollment',
        'imp-alice,user,false,imp-alice,"ops,lab",',
        'imp-taken,device,,,,',
        // A quoted field over two lines: the rows after it keep their line numbers.
        'imp-multi,service,,,"blue;',
        'green",none',
        'imp-bad-type,robot,,,,',
        'imp-admin,user,yes,,,',
        '',
      ].join('\r\n'),
    );

    const res = await svc(['edge', 'import', 'identities', file, '--allow-admins']);

    expect(res.code).toBe(1);
    expect(res.stderr).toBe('svc: 2 of 5 rows failed\n');
    expect(res.stdout).toContain(
      `Imported 3 of 5 identities from ${file}\nAdmins created (1), by row: 7 (imp-admin)\n`,
    );
    const lines = res.stdout.split('\n');
    expect(lines.find((l) => l.startsWith('3 '))).toMatch(/^3\s+imp-taken\s+CONFLICT\s+.*name/);
    expect(lines.find((l) => l.startsWith('6 '))).toMatch(
      /^6\s+imp-bad-type\s+INVALID_ROW\s+unknown type "robot"/,
    );
    // Piped stderr: no progress bar.
    expect(res.stderr).not.toContain('\r');

    const alice = await fixture.detailByName('imp-alice');
    expect(alice).toMatchObject({ type: 'User', isAdmin: false, roleAttributes: ['lab', 'ops'] });
    expect(Object.keys(alice.enrollment)).toEqual(['updb']);
    const multi = await fixture.detailByName('imp-multi');
    expect(multi).toMatchObject({ type: 'Service', roleAttributes: ['blue', 'green'] });
    expect(multi.enrollment ?? {}).toEqual({});
    const admin = await fixture.detailByName('imp-admin');
    expect(admin).toMatchObject({ isAdmin: true });
    expect(Object.keys(admin.enrollment)).toEqual(['ott']);
  });

  test('a file that grants permissions is refused without --allow-permissions; with it they are set', async () => {
    const file = writeHome(
      'permissions.csv',
      ['name,permissions', 'imp-perm-plain,', 'imp-perm-rs,token-introspection'].join('\n'),
    );

    const refused = await svc(['edge', 'import', 'identities', file]);
    const allowed = await svc(['edge', 'import', 'identities', file, '--allow-permissions']);

    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `svc: ${file}: row 3 (imp-perm-rs) would grant permissions: nothing was imported; ` +
        'give --allow-permissions to import them\n',
    );
    expect(allowed.code).toBe(0);
    expect((await fixture.detailByName('imp-perm-rs')).permissions).toEqual(['token-introspection']);
    expect((await fixture.detailByName('imp-perm-plain')).permissions).toEqual([]);
  });

  test('a file with admin rows is refused without --allow-admins, naming the rows; nothing is imported', async () => {
    const rows = [
      'name,isAdmin',
      'imp-adm-plain,false',
      ...Array.from({ length: 7 }, (_, i) => `imp-adm-${i},${['true', 'yes', '1', 'TRUE'][i % 4]}`),
      'imp-adm-odd,maybe',
    ];
    const file = writeHome('admins.csv', rows.join('\n'));

    const refused = await svc(['edge', 'import', 'identities', file]);

    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      `svc: ${file}: rows 3 (imp-adm-0), 4 (imp-adm-1), 5 (imp-adm-2), 6 (imp-adm-3), 7 (imp-adm-4) ` +
        'and 2 more would create admins (isAdmin true): nothing was imported; give --allow-admins to import them\n',
    );
    const listed = await fixture.api.get(
      `/identities?filter=${encodeURIComponent('name contains "imp-adm-"')}`,
    );
    expect(listed.body.data).toEqual([]);

    const one = writeHome('one-admin.json', JSON.stringify([{ name: 'imp-adm-j', isAdmin: true }]));
    const refusedJson = await svc(['edge', 'import', 'identities', one, '--json']);
    expect(refusedJson.code).toBe(2);
    expect(refusedJson.stderr).toContain(`${one}: row 1 (imp-adm-j) would create an admin (isAdmin true)`);

    const allowed = await svc(['edge', 'import', 'identities', file, '--allow-admins', '--json']);

    expect(allowed.code).toBe(1); // the "maybe" row
    const report = JSON.parse(allowed.stdout);
    expect(report.admins.map((a: any) => [a.row, a.name])).toEqual(
      Array.from({ length: 7 }, (_, i) => [i + 3, `imp-adm-${i}`]),
    );
    expect(report.created).toHaveLength(8);
    expect(report.failed).toEqual([
      { row: 10, name: 'imp-adm-odd', code: 'INVALID_ROW', message: 'isAdmin must be true or false' },
    ]);
    expect(await fixture.detailByName('imp-adm-3')).toMatchObject({ isAdmin: true });
    expect(await fixture.detailByName('imp-adm-plain')).toMatchObject({ isAdmin: false });
  });

  test('a JSON import in batches with --json lists every created id; exit 0 when no row failed', async () => {
    const rows = Array.from({ length: 23 }, (_, i) => ({
      name: `imp-json-${i}`,
      type: 'device',
      roleAttributes: ['bulk'],
    }));
    const file = writeHome('devices.json', JSON.stringify(rows));

    const res = await svc(['edge', 'import', 'identities', file, '--batch-size', '7', '--json']);

    expect(res).toMatchObject({ code: 0, stderr: '' });
    const report = JSON.parse(res.stdout);
    expect(report.total).toBe(23);
    expect(report.failed).toEqual([]);
    expect(report.created.map((c: any) => [c.row, c.name])).toEqual(rows.map((r, i) => [i + 1, r.name]));
    const listed = await fixture.api.get(
      `/identities?limit=100&filter=${encodeURIComponent('name contains "imp-json-"')}`,
    );
    expect(listed.body.data.map((i: any) => i.id).sort()).toEqual(
      report.created.map((c: any) => c.id).sort(),
    );
  });

  test('a file with an unknown column is refused before any request (usage error)', async () => {
    const file = writeHome('typo.csv', 'name,isadmin\nimp-typo,true\n');
    const res = await svc(['edge', 'import', 'identities', file]);
    expect(res.code).toBe(2);
    expect(oneLine(res.stderr)).toBe(true);
    expect(res.stderr).toContain('unknown column isadmin');
    const listed = await fixture.api.get(`/identities?filter=${encodeURIComponent('name = "imp-typo"')}`);
    expect(listed.body.data).toEqual([]);
  });

  // Every control a terminal acts on: C0 (ESC, BEL, CR, LF), DEL, C1 and bidi controls.
  const RAW_CONTROL =
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

  test('escape sequences from an import file are shown escaped, never sent to the terminal raw', async () => {
    const file = writeHome(
      'hostile.csv',
      'name,type\n"evil\u001b]0;PWNED\u0007\u001b[2J\u001b[Hall good",device\nimp-ok-one,"bad\u001b[31mtype"\n',
    );
    const res = await svc(['edge', 'import', 'identities', file]);
    expect(res.code).toBe(1);
    expect(res.stdout + res.stderr).not.toMatch(RAW_CONTROL);
    expect(res.stdout).toContain('evil\\u001b]0;PWNED\\u0007\\u001b[2J\\u001b[Hall good');
    expect(res.stdout).toContain('unknown type "bad\\u001b[31mtype"');
    expect(res.stderr).toBe('svc: 2 of 2 rows failed\n');

    const column = await svc([
      'edge',
      'import',
      'identities',
      writeHome('hostile2.csv', 'name,ty\u001b[2Jpe\n'),
    ]);
    expect(column.code).toBe(2);
    expect(column.stderr).not.toMatch(RAW_CONTROL);
    expect(column.stderr).toContain('unknown column ty\\u001b[2Jpe');

    const json = await svc([
      'edge',
      'import',
      'identities',
      writeHome('hostile3.json', '[{"name":"x"}, \u001b[2J]'),
    ]);
    expect(json.code).toBe(1);
    expect(oneLine(json.stderr)).toBe(true);
    expect(json.stderr).not.toMatch(RAW_CONTROL);
    expect(json.stderr).toContain('not valid JSON');
  });

  test('a stored name with CR, LF, C1 and bidi controls lists as one escaped row', async () => {
    // Names stored before the server refused such characters: the CLI must still show them safely.
    const created = await fixture.api.post('/identities', { name: 'imp-ctl-old', isAdmin: false });
    expect(created.status).toBe(201);
    const hostile = 'imp-ctl-x\rtrusted\nFAKEID  fake-admin  User  true\u009b31m\u007f\u202e';
    await fixture.server.app.knex('identities').where({ id: created.body.data.id }).update({ name: hostile });

    const res = await svc(['edge', 'list', 'identities', 'name contains "imp-ctl-"']);
    expect(res.code).toBe(0);
    expect(res.stdout).not.toMatch(RAW_CONTROL);
    const lines = res.stdout.trimEnd().split('\n');
    // Header, one row, the count: the LF in the name forged no row.
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe('results: 1');
    expect(lines[1]).toContain(
      'imp-ctl-x\\u000dtrusted\\u000aFAKEID  fake-admin  User  true\\u009b31m\\u007f\\u202e',
    );

    const json = await svc(['edge', 'list', 'identities', 'name contains "imp-ctl-"', '--json']);
    expect(json.stdout).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ name: hostile })]);
  });

  test('an import file over 64 MiB is refused before it is read', async () => {
    const file = writeHome('huge.csv', '');
    truncateSync(file, 64 * 1024 * 1024 + 1);
    const res = await svc(['edge', 'import', 'identities', file]);
    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe(true);
    expect(res.stderr).toContain('at most 67108864 bytes (64 MiB)');
  });

  test('a file of more than 1,000,000 rows, CSV or JSON, is refused while parsing (exit code 1)', async () => {
    // A HOME with no session: the file is refused before the CLI looks for one.
    const noSession = mkdtempSync(join(tmpdir(), 'svc-cli-rows-'));
    try {
      // The header line and one row more than the limit; 2 MB, not the 64 MiB that exhausts the heap.
      const csv = writeHome('rows.csv', `name\n${'a\n'.repeat(1_000_001)}`);
      const json = writeHome('rows.json', `[${'0,'.repeat(1_000_000)}0]`);
      for (const file of [csv, json]) {
        const res = await svc(['edge', 'import', 'identities', file], { home: noSession });
        expect(res.code).toBe(1);
        expect(oneLine(res.stderr)).toBe(true);
        expect(res.stderr).toBe(
          `svc: ${file} has more than 1000000 rows, the most an import file may have: split it\n`,
        );
      }
      // Exactly the limit is parsed; it then fails for want of a session, not of room.
      const atLimit = writeHome('limit.json', `[${'0,'.repeat(999_999)}0]`);
      const res = await svc(['edge', 'import', 'identities', atLimit], { home: noSession });
      expect(res.stderr).toContain('not logged in');
    } finally {
      rmSync(noSession, { recursive: true, force: true });
    }
  });

  test('a file that starts with a UTF-8 byte-order mark imports, JSON or CSV', async () => {
    for (const [file, content] of [
      ['bom.json', '\uFEFF[{"name":"imp-bom-json"}]'],
      ['bom.csv', '\uFEFFname\r\nimp-bom-csv\r\n'],
    ]) {
      const res = await svc(['edge', 'import', 'identities', writeHome(file!, content!)]);
      expect(res).toMatchObject({ code: 0, stderr: '' });
    }
    expect(await fixture.detailByName('imp-bom-json')).toMatchObject({ name: 'imp-bom-json' });
    expect(await fixture.detailByName('imp-bom-csv')).toMatchObject({ name: 'imp-bom-csv' });
  });

  test('JSON nested deeper than a row, objects in a row, unknown keys, wide CSV records: refused', async () => {
    // A HOME with no session: each file is refused before the CLI looks for one.
    const noSession = mkdtempSync(join(tmpdir(), 'svc-cli-shape-'));
    const tooDeep =
      'nests too deep: a row is an object whose values are text, numbers, true, false, null or arrays of those';
    const cases: [string, string, number, string][] = [
      ['deep.json', '[{"name":"x"},{"name":"y","roleAttributes":[["a"]]}]', 1, `row 2 ${tooDeep}`],
      // Each {} becomes an object: a row of them cost 179 MiB of heap for 8 MiB of file.
      ['objects.json', `[{"name":"x","roleAttributes":[${'{},'.repeat(1000)}{}]}]`, 1, `row 1 ${tooDeep}`],
      ['top.json', '{"name":"x"}', 1, 'expected a JSON array of identities'],
      ['key.json', '[{"name":"x"},{"name":"y","extra":[{},{}]}]', 2, 'unknown column extra; known: name,'],
      ['wide.csv', `name\nx${','.repeat(64)}\n`, 1, 'line 2: a record has more than 64 fields'],
    ];
    try {
      for (const [name, content, code, message] of cases) {
        const file = writeHome(name, content);
        const res = await svc(['edge', 'import', 'identities', file], { home: noSession });
        expect({ name, code: res.code, oneLine: oneLine(res.stderr) }).toEqual({ name, code, oneLine: true });
        expect(res.stderr).toContain(`svc: ${file}`);
        expect(res.stderr).toContain(message);
      }
      // At the limits: parsed, then refused for want of a session, not for its shape.
      const fits = writeHome('fits.json', '[{"name":"x","roleAttributes":["a",1,true,null]},[[0]],7]');
      const res = await svc(['edge', 'import', 'identities', fits], { home: noSession });
      expect(res.stderr).toContain('not logged in');
    } finally {
      rmSync(noSession, { recursive: true, force: true });
    }
  });

  test('on a terminal, the import draws a progress bar on stderr', async () => {
    const file = writeHome(
      'tty.json',
      JSON.stringify(Array.from({ length: 12 }, (_, i) => ({ name: `imp-tty-${i}` }))),
    );
    const { code, screen } = await runSvcInTerminal(['edge', 'import', 'identities', file], { home }, []);
    expect(code).toBe(0);
    expect(screen).toContain('importing identities [');
    expect(screen).toContain('12/12');
    expect(screen).toContain('Imported 12 of 12 identities');
  });

  test('the identity table and the help fit the terminal width; piped output keeps whole values', async () => {
    const long = `imp-${'very-long-name-'.repeat(6)}end`;
    expect((await fixture.api.post('/identities', { name: long, isAdmin: false })).status).toBe(201);
    const filter = 'name contains "very-long-name"';

    const narrow = await svc(['edge', 'list', 'identities', filter], { env: { COLUMNS: '60' } });
    expect(narrow.code).toBe(0);
    const tableLines = narrow.stdout.trimEnd().split('\n');
    for (const line of tableLines) expect([...line].length).toBeLessThanOrEqual(60);
    expect(tableLines[1]).toContain('…');
    expect(tableLines[1]).toMatch(/\bDefault\s+false$/);

    const piped = await svc(['edge', 'list', 'identities', filter]);
    expect(piped.stdout).toContain(long);

    // The help wraps its explanations the same way.
    const help = await svc(['--help'], { env: { COLUMNS: '80' } });
    expect(help.code).toBe(0);
    for (const line of help.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    expect(help.stdout).toContain('svc edge import identities <file.csv|file.json>');
  });

  test('svc completion bash completes commands, flags and argument choices', async () => {
    const res = await svc(['completion', 'bash']);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const script = writeHome('svc.bash', res.stdout);
    const complete = (...words: string[]) => {
      const quoted = words.map((w) => `'${w}'`).join(' ');
      const run = spawnSync(
        'bash',
        [
          '-c',
          `source '${script}'; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _svc; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: 'utf8' },
      );
      expect(run.stderr).toBe('');
      return run.stdout.trim();
    };
    expect(complete('svc', '')).toBe('login edge enroll keys controller version completion');
    expect(complete('svc', 'edge', 'im')).toBe('import');
    expect(complete('svc', 'edge', 'import', 'identities', '--b')).toBe('--batch-size');
    expect(complete('svc', 'edge', 'import', 'identities', '--allow-a')).toBe('--allow-admins');
    expect(complete('svc', 'edge', 'create', 'identity', '--ad')).toBe('--admin');
    expect(complete('svc', 'edge', 'create', 'identity', 'd')).toBe('device');
    expect(complete('svc', 'edge', 'create', 'identity', 'device', '')).toBe('');
    expect(complete('svc', 'completion', '')).toBe('bash zsh');

    const zsh = await svc(['completion', 'zsh']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef svc\n/);
    expect(zsh.stdout).toContain('compdef _svc svc');
    const fish = await svc(['completion', 'fish']);
    expect(fish.code).toBe(2);
    expect(fish.stderr).toBe('svc: unknown shell "fish": use bash or zsh\n');
  });
});
