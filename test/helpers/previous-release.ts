import { describe } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeWithPostgres, usingPostgres } from './test-database.js';

/** A release of the CHANGELOG: its version, and the commit it was made from. */
export interface Release {
  version: string;
  commit: string;
}

/** The release an upgrade test starts from, or why there is none to start from here. */
export type PreviousRelease = { release: Release; source: string } | { skip: string };

/** The environment variable that names the previous release's commit instead of CHANGELOG.md. */
export const PREVIOUS_RELEASE_VARIABLE = 'SVC_PREVIOUS_RELEASE_COMMIT';

const HEADING = /^## +v?(\d+\.\d+\.\d+[\w.+-]*) +[—–-] +\S/;
const COMMIT_LINE = /^Commit: +`([0-9a-f]{40})`\s*$/;
const PLACEHOLDER = /^0{40}$/;

/**
 * The releases of a changelog, newest first: each `## x.y.z — date` heading with the 40-hex
 * commit on a `Commit:` line of its section. A heading without one (or with a placeholder) is
 * not a release a checkout can be built from and is left out.
 */
export function parseReleases(changelog: string): Release[] {
  const releases: Release[] = [];
  let version: string | undefined;
  let commit: string | undefined;
  const close = () => {
    if (version && commit && !PLACEHOLDER.test(commit)) releases.push({ version, commit });
    version = commit = undefined;
  };
  for (const line of changelog.split('\n')) {
    if (line.startsWith('## ')) {
      close();
      version = HEADING.exec(line)?.[1];
      continue;
    }
    const found = version && !commit ? COMMIT_LINE.exec(line.trim()) : null;
    if (found) commit = found[1];
  }
  close();
  return releases;
}

function git(root: string, args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

function gitSucceeds(root: string, args: string[]): boolean {
  try {
    git(root, args);
    return true;
  } catch {
    return false;
  }
}

const hasCommit = (root: string, sha: string) => gitSucceeds(root, ['cat-file', '-e', `${sha}^{commit}`]);

/**
 * A commit the repository lacks: in a shallow clone that is the clone's doing (skip, saying how to
 * get it); in a full one the CHANGELOG names a commit that does not exist, which is a failure.
 */
function missing(root: string, what: string): PreviousRelease {
  if (git(root, ['rev-parse', '--is-shallow-repository']) === 'true') {
    return { skip: `the clone is shallow and lacks ${what} (git fetch --unshallow to get it)` };
  }
  throw new Error(`${what} is not in this repository (not a shallow clone)`);
}

/** The version a commit's package.json gives, for a commit named without a CHANGELOG entry. */
function versionAt(root: string, sha: string): string {
  try {
    return JSON.parse(git(root, ['show', `${sha}:package.json`])).version as string;
  } catch {
    return 'unknown';
  }
}

/** The commit named by SVC_PREVIOUS_RELEASE_COMMIT (any form git resolves). */
function fromVariable(root: string, named: string, releases: Release[]): PreviousRelease {
  let sha: string;
  try {
    sha = git(root, ['rev-parse', '--verify', '--quiet', `${named}^{commit}`]);
  } catch {
    return missing(root, `commit ${named} (${PREVIOUS_RELEASE_VARIABLE})`);
  }
  const listed = releases.find((r) => r.commit === sha);
  return {
    release: { version: listed?.version ?? versionAt(root, sha), commit: sha },
    source: PREVIOUS_RELEASE_VARIABLE,
  };
}

/**
 * The release before this checkout: SVC_PREVIOUS_RELEASE_COMMIT if set, else the newest release of
 * CHANGELOG.md whose commit is not HEAD and is an ancestor of HEAD (a release made on another
 * branch is no previous release of this one). Throws only when the repository is complete and
 * still lacks the named commit.
 */
export function findPreviousRelease(
  root = process.cwd(),
  env: Record<string, string | undefined> = process.env,
): PreviousRelease {
  const releases = parseReleases(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'));
  const named = env[PREVIOUS_RELEASE_VARIABLE]?.trim();
  if (named) return fromVariable(root, named, releases);
  const head = git(root, ['rev-parse', 'HEAD']);
  for (const release of releases) {
    if (release.commit === head) continue;
    if (!hasCommit(root, release.commit)) {
      return missing(root, `commit ${release.commit} of release ${release.version}`);
    }
    if (gitSucceeds(root, ['merge-base', '--is-ancestor', release.commit, head])) {
      return { release, source: 'CHANGELOG.md' };
    }
  }
  return {
    skip:
      'CHANGELOG.md names no earlier release of this branch (a "## x.y.z — date" heading with a ' +
      `"Commit:" line naming an ancestor of HEAD); ${PREVIOUS_RELEASE_VARIABLE} names one by hand`,
  };
}

const notResolved = (): never => {
  throw new Error('no previous release');
};

/**
 * A suite that starts from the previous release (PostgreSQL only): without PostgreSQL, or without
 * a previous release to build (see findPreviousRelease), it is skipped visibly with the reason in
 * its title and on stderr. A release the repository should have and lacks fails its tests.
 */
export function describeWithPreviousRelease(
  title: string,
  fn: (previous: () => { release: Release; source: string }) => void,
): void {
  if (!usingPostgres) return describeWithPostgres(title, () => fn(notResolved));
  let found: PreviousRelease | Error;
  try {
    found = findPreviousRelease();
  } catch (err) {
    found = err as Error;
  }
  if (!(found instanceof Error) && 'skip' in found) {
    // Straight to stderr: jest drops the console output of a suite whose every test is skipped.
    process.stderr.write(`skipped: ${title} (${found.skip})\n`);
    return describe.skip(`${title} (skipped: ${found.skip})`, () => fn(notResolved));
  }
  const resolved = found;
  describe(title, () =>
    fn(() => {
      if (resolved instanceof Error) throw resolved;
      return resolved;
    }),
  );
}
