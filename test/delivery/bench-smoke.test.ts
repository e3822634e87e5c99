// `npm run bench` is kept out of the test run (its figures need a quiet machine and minutes);
// its smoke mode checks here that it still starts every target, drives every scenario and prints
// both tables, so that the bench does not rot between the runs that quote it.
import { expect, jest, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { usingPostgres } from '../helpers/test-database.js';

const run = promisify(execFile);
jest.setTimeout(240_000);

test(`npm run bench -- --smoke${usingPostgres ? ' --pg' : ''} runs every scenario and prints both tables`, async () => {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', 'bench/run.ts', '--smoke', ...(usingPostgres ? ['--pg'] : [])],
    { cwd: process.cwd(), maxBuffer: 10 * 1024 * 1024, timeout: 220_000 },
  );
  for (const row of [
    /^bearer GET current-api-session, 32 conns +\| [\d,]+ req\/s/m,
    /^bearer GET current-identity, 32 conns +\| [\d,]+ req\/s/m,
    /^svc-session GET current-api-session, 32 conns +\| [\d,]+ req\/s/m,
    /^full login \(authz, login, 303, token\), 8 workers +\| [\d,]+ flow\/s/m,
    /^refresh grant with rotation, 8 workers +\| [\d,]+ grant\/s/m,
  ])
    expect(stdout).toMatch(row);
  expect(stdout).toMatch(/^Targets:$/m);
  expect(stdout).toMatch(/^RSS idle after seeding +\| \d+ MB/m);
  if (usingPostgres) {
    // Login and refresh are paired with baseline (c), the bare provider on PostgreSQL; (b) is the reference.
    expect(stdout).toMatch(/^full login .* +\| [\d,]+ flow\/s.*\| \(c\): [\d,]+ flow\/s/m);
    expect(stdout).toMatch(/^refresh grant .* +\| [\d,]+ grant\/s.*\| \(c\): [\d,]+ grant\/s/m);
    expect(stdout).toMatch(/^ +same, against \(b\) for reference +\| +\| \(b\): [\d,]+ flow\/s/m);
    expect(stdout).toMatch(
      /^full login \(PostgreSQL CPU included\): CPU\/op vs \(c\) +\| \d+\.\d\dx .*\| (PASS|FAIL)$/m,
    );
    expect(stdout).toMatch(
      /^SQL statements per refresh grant \(BEGIN\/COMMIT included\) +\| \d+\.\d\d +\| ≤ 3 +\| (PASS|FAIL)$/m,
    );
    expect(stdout).toMatch(/^start to ready \(second start on PostgreSQL\) +\| [\d,]+ ms/m);
    expect(stdout).toMatch(
      /login: service p99 [\d.,]+ ms, \d+\.\d\d SQL statements\/op.*; \(c\) \d+\.\d\d SQL statements\/op/,
    );
  } else {
    expect(stdout).toMatch(/^\(c\) bare oidc-provider on PostgreSQL: not run \(needs --pg\)/m);
    expect(stdout).toMatch(
      /^full login \(PostgreSQL CPU included\): throughput vs \(c\) +\| not measured \(needs --pg\)/m,
    );
  }
  expect(stdout).toMatch(/^Smoke run \(--smoke\)/m);
});
