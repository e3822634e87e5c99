// CHANGELOG.md names the releases (its preamble describes the format): a release that cannot be
// found in the history, is out of order, or does not say how to upgrade to it fails here.
import { describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { migrationSource } from '../../src/db/migration-source.js';

const root = resolve(process.cwd());
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));

/** The first release, from before release records were kept: it has no commit or sections. */
const FIRST_RELEASE = '0.1.0';
const PLACEHOLDER = '(set when released)';
// semver.org's regular expression for a version, build metadata left out (it does not order).
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?$/;

interface Section {
  heading: string;
  body: string;
}

function sections(markdown: string): Section[] {
  return markdown
    .split(/^(?=## )/m)
    .slice(1)
    .map((part) => {
      const [heading, ...body] = part.split('\n');
      return { heading: heading!.slice(3), body: body.join('\n') };
    });
}

/** Semantic versioning's precedence (semver.org §11): < 0 when a comes first. */
function compareVersions(a: string, b: string): number {
  const [, ...pa] = SEMVER.exec(a)!;
  const [, ...pb] = SEMVER.exec(b)!;
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return Number(pa[i]) - Number(pb[i]);
  const [preA, preB] = [pa[3], pb[3]];
  if (preA === preB) return 0;
  if (preA === undefined) return 1;
  if (preB === undefined) return -1;
  const [ia, ib] = [preA.split('.'), preB.split('.')];
  for (let i = 0; i < Math.min(ia.length, ib.length); i++) {
    const [x, y] = [ia[i]!, ib[i]!];
    if (x === y) continue;
    const [nx, ny] = [/^\d+$/.test(x), /^\d+$/.test(y)];
    if (nx && ny) return Number(x) - Number(y);
    if (nx !== ny) return nx ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return ia.length - ib.length;
}

const inHistory = (sha: string) => {
  try {
    execFileSync('git', ['cat-file', '-e', `${sha}^{commit}`], { cwd: root, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** The `- \`name\`` entries of a release's "### Migrations" subsection. */
const migrationsListed = (body: string) => {
  const list = body.split(/^### Migrations$/m)[1]?.split(/^#/m)[0] ?? '';
  return [...list.matchAll(/^- `(\d{3}_\w+)`/gm)].map((m) => m[1]!);
};

describe('CHANGELOG.md', () => {
  const all = sections(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'));
  const releases = all.slice(1).map((s) => {
    const heading = /^(\S+)(?: — (\d{4}-\d{2}-\d{2}))?$/.exec(s.heading);
    return { ...s, version: heading?.[1] ?? s.heading, date: heading?.[2] };
  });
  const recorded = releases.filter((r) => r.version !== FIRST_RELEASE);

  test('"Unreleased" comes first, then releases named by semantic versions, newest first', () => {
    expect(all[0]?.heading).toBe('Unreleased');
    expect(releases.map((r) => r.version).filter((v) => !SEMVER.test(v))).toEqual([]);
    expect(releases.at(-1)?.version).toBe(FIRST_RELEASE);
    const outOfOrder = releases
      .slice(1)
      .map((r, i) => [releases[i]!.version, r.version] as const)
      .filter(([newer, older]) => compareVersions(newer, older) <= 0)
      .map(([newer, older]) => `${newer} above ${older}`);
    expect(outOfOrder).toEqual([]);
  });

  test("package.json's version (and package-lock.json's) is the newest release", () => {
    const newest = releases[0]!.version;
    const lock = readJson('package-lock.json');
    expect({
      package: readJson('package.json').version,
      lock: lock.version,
      lockRoot: lock.packages[''].version,
    }).toEqual({ package: newest, lock: newest, lockRoot: newest });
  });

  test('every recorded release has a date and its commit: one in the history, or the placeholder on the newest', () => {
    const problems: string[] = [];
    for (const [i, r] of recorded.entries()) {
      if (!r.date || Number.isNaN(Date.parse(r.date))) problems.push(`${r.version}: no date`);
      const commit = /^Commit: (?:`([0-9a-f]{40})`|(.+))$/m.exec(r.body.trim().split('\n')[0] ?? '');
      if (!commit) problems.push(`${r.version}: no "Commit:" line under the heading`);
      else if (commit[2] !== undefined && !(commit[2] === PLACEHOLDER && i === 0))
        problems.push(`${r.version}: "${commit[2]}" is not a commit`);
      else if (commit[1] !== undefined && !inHistory(commit[1]))
        problems.push(`${r.version}: ${commit[1]} is not in the history`);
    }
    expect(recorded.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  test('every recorded release lists its migrations and says whether it may be rolled out over the previous one', () => {
    const missing = recorded.flatMap((r) => [
      ...(migrationsListed(r.body).length > 0 ? [] : [`${r.version}: Migrations`]),
      ...(/^### Rolling upgrade\n+\S/m.test(r.body) ? [] : [`${r.version}: Rolling upgrade`]),
    ]);
    expect(missing).toEqual([]);
  });

  test('every migration of the code is in the newest release or named under "Unreleased"', async () => {
    const known = await migrationSource.getMigrations([]);
    const listed = new Set(migrationsListed(releases[0]!.body));
    const unreleased = all[0]!.body;
    expect(known.filter((m) => !listed.has(m) && !unreleased.includes(`\`${m}\``))).toEqual([]);
  });
});
