import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { passwordLogin } from '../helpers/oidc-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME } from '../helpers/test-server.js';
import { oneLine, startCliFixture, type CliFixture } from './cli-fixture.js';

describe('svc edge list api-sessions', () => {
  let fixture: CliFixture;
  beforeAll(async () => {
    fixture = await startCliFixture();
    await passwordLogin(fixture.server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
  });
  afterAll(() => fixture.close());

  test('a table of the live sessions, and --json with a filter', async () => {
    const table = await fixture.svc(['edge', 'list', 'api-sessions']);
    const json = await fixture.svc(['edge', 'list', 'api-sessions', 'kind = "oidc"', '--json']);

    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/ID +IDENTITY +KIND +METHOD +ADDRESS +LAST ACTIVITY +EXPIRES AT/);
    // The fixture's own login (legacy, with the CLI) and the OIDC login above.
    expect(table.stdout).toMatch(/admin +legacy +password +127\.0\.0\.1/);
    expect(table.stdout).toMatch(/admin +oidc +password +127\.0\.0\.1/);
    expect(json.code).toBe(0);
    const items = JSON.parse(json.stdout);
    expect(items.length).toBeGreaterThan(0);
    expect(items.every((s: { kind: string }) => s.kind === 'oidc')).toBe(true);
  });

  test('a bad filter exits 1 with one line naming the field', async () => {
    const res = await fixture.svc(['edge', 'list', 'api-sessions', 'kind > "a"']);

    expect(res.code).toBe(1);
    expect(oneLine(res.stderr)).toBe(true);
    expect(res.stderr).toContain('field "kind" does not support >');
  });
});
