import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { oneLine, startCliFixture, type CliFixture } from '../cli/cli-fixture.js';
import { spawnSvc } from '../cli/run-svc.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * `svc edge list audit-events` as a user runs it: the real CLI process against a real server,
 * logged in as the admin. Events come from identities created through the management API.
 */
describe('svc edge list audit-events', () => {
  let fixture: CliFixture;
  const CREATED = 'event = "identity.created"';

  beforeAll(async () => {
    fixture = await startCliFixture();
  });
  afterAll(() => fixture.close());

  async function createIdentity(name: string): Promise<string> {
    const res = await fixture.api.post('/identities', { name, isAdmin: false });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  /** `--json` of the list once it shows `identityId` (on PostgreSQL an event is readable once older transactions end). */
  const listedWith = (identityId: string, args: string[] = []) =>
    waitFor(async () => {
      const res = await fixture.svc(['edge', 'list', 'audit-events', CREATED, '--json', ...args]);
      expect(res).toMatchObject({ code: 0, stderr: '' });
      const events = JSON.parse(res.stdout) as { identityId?: string }[];
      return events.some((e) => e.identityId === identityId) && events;
    });

  test('a table oldest first and --json with a filter and --limit', async () => {
    const first = await createIdentity('audit-cli-first');
    const second = await createIdentity('audit-cli-second');
    const events = await listedWith(second);
    expect(events.map((e) => e.identityId).slice(-2)).toEqual([first, second]);

    const newestOnly = await fixture.svc(['edge', 'list', 'audit-events', CREATED, '--json', '--limit', '1']);
    expect(JSON.parse(newestOnly.stdout).map((e: { identityId: string }) => e.identityId)).toEqual([second]);

    const table = await fixture.svc(['edge', 'list', 'audit-events', CREATED]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^OCCURRED AT +EVENT +OUTCOME +IDENTITY +ACTOR +ADDRESS +DETAILS$/);
    const firstLine = lines.findIndex((l) => l.includes(first));
    const secondLine = lines.findIndex((l) => l.includes(second));
    expect(firstLine).toBeGreaterThan(0);
    expect(secondLine).toBeGreaterThan(firstLine);
    // No outcome for a change: the column stays empty; the actor is the admin.
    expect(lines[secondLine]).toMatch(
      new RegExp(`^\\S+Z +identity\\.created +${second} +\\S+ +127\\.0\\.0\\.1 +type=Default isAdmin=false$`),
    );
    expect(lines.at(-1)).toBe(`results: ${lines.length - 2}`);
  });

  test('a filter the list cannot answer exits 1 with one line; a bad --limit exits 2', async () => {
    const bad = await fixture.svc(['edge', 'list', 'audit-events', 'event contains "auth"']);
    expect(bad.code).toBe(1);
    expect(oneLine(bad.stderr)).toBe(true);
    expect(bad.stderr).toContain('field "event" takes only =');

    const limit = await fixture.svc(['edge', 'list', 'audit-events', '--limit', '0']);
    expect(limit.code).toBe(2);
    expect(oneLine(limit.stderr)).toBe(true);
  });

  test('--follow prints the newest events, then each new one once, in order, until interrupted', async () => {
    const before = await createIdentity('audit-cli-follow-0');
    await listedWith(before);
    const child = spawnSvc(['edge', 'list', 'audit-events', CREATED, '--follow', '--json'], {
      home: fixture.home,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    const followed = () =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { identityId: string }).identityId);
    try {
      await waitFor(() => followed().includes(before), { what: 'the newest events' });
      const made: string[] = [];
      for (let i = 1; i <= 3; i++) made.push(await createIdentity(`audit-cli-follow-${i}`));
      await waitFor(() => followed().includes(made[2]!), { what: 'the new events', timeout: 30_000 });
      const seen = followed();
      expect(seen.slice(seen.indexOf(before))).toEqual([before, ...made]);
      expect(new Set(seen).size).toBe(seen.length);
    } finally {
      child.kill('SIGINT');
    }
    expect(await closed).toEqual({ code: null, signal: 'SIGINT' });
    expect(stderr).toBe('');
  });

  test('--follow in a table: one header, then a line per new event', async () => {
    const child = spawnSvc(['edge', 'list', 'audit-events', CREATED, '-f', '-n', '1'], {
      home: fixture.home,
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const closed = new Promise((resolve) => child.on('close', resolve));
    try {
      await waitFor(() => stdout.split('\n').length >= 3, { what: 'the header and the newest event' });
      const made = await createIdentity('audit-cli-follow-table');
      await waitFor(() => stdout.includes(made), { what: 'the new event', timeout: 30_000 });
      const lines = stdout.trimEnd().split('\n');
      expect(lines.filter((l) => l.startsWith('OCCURRED AT'))).toHaveLength(1);
      expect(lines).toHaveLength(3);
      expect(lines[2]).toMatch(new RegExp(`identity\\.created +${made} `));
      expect(stdout).not.toContain('results:');
    } finally {
      child.kill('SIGINT');
    }
    await closed;
  });
});
