import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { oneLine, startCliFixture, type CliFixture } from './cli-fixture.js';

const CLIENT = '/edge/client/v1';

describe('svc edge delete api-session(s)', () => {
  let fixture: CliFixture;
  beforeAll(async () => {
    fixture = await startCliFixture();
  });
  afterAll(() => fixture.close());

  /** A UPDB user created and enrolled through the API, with two legacy sessions. */
  async function userWithSessions(name: string) {
    const created = await fixture.api.post('/identities', {
      name,
      isAdmin: false,
      enrollment: { updb: name },
    });
    const id = created.body.data.id as string;
    const { token } = (await fixture.api.get(`/identities/${id}`)).body.data.enrollment.updb;
    const password = `Pw-${name}-1234`;
    const client = fixture.server.client;
    expect((await client.post(`${CLIENT}/enroll/updb?token=${token}`, { body: { password } })).status).toBe(
      200,
    );
    const login = async () =>
      (await client.post(`${CLIENT}/authenticate?method=password`, { body: { username: name, password } }))
        .body.data as { id: string; token: string };
    return { id, sessions: [await login(), await login()] };
  }

  const works = async (token: string) =>
    (await fixture.server.client.get(`${CLIENT}/current-identity`, { headers: { 'svc-session': token } }))
      .status;

  test('delete api-session ends one session; an unknown id is one line and exit code 1', async () => {
    const user = await userWithSessions('cli-session-one');
    const [ended, kept] = user.sessions as [{ id: string; token: string }, { id: string; token: string }];

    const res = await fixture.svc(['edge', 'delete', 'api-session', ended.id]);

    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toBe(`Ended API session ${ended.id}\n`);
    expect(await works(ended.token)).toBe(401);
    expect(await works(kept.token)).toBe(200);

    const again = await fixture.svc(['edge', 'delete', 'api-session', ended.id, '--json']);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toBe(true);
    expect(again.stderr).toContain(`no API session has the id "${ended.id}"`);
  });

  test('delete api-sessions --identity ends every session of an identity named by name or id', async () => {
    const byName = await userWithSessions('cli-session-all');
    const other = await userWithSessions('cli-session-other');

    const res = await fixture.svc(['edge', 'delete', 'api-sessions', '--identity', 'cli-session-all']);

    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(res.stdout).toBe(`Ended every API session of identity cli-session-all (id ${byName.id})\n`);
    for (const s of byName.sessions) expect(await works(s.token)).toBe(401);
    for (const s of other.sessions) expect(await works(s.token)).toBe(200);

    const json = await fixture.svc(['edge', 'delete', 'api-sessions', '--identity', other.id, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ identityId: other.id, ended: true });
    for (const s of other.sessions) expect(await works(s.token)).toBe(401);

    const unknown = await fixture.svc(['edge', 'delete', 'api-sessions', '--identity', 'nobody-at-all']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no identity is named "nobody-at-all" or has that id');
    const missing = await fixture.svc(['edge', 'delete', 'api-sessions']);
    expect(missing.code).toBe(2);
    expect(oneLine(missing.stderr)).toBe(true);
  });
});
