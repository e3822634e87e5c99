import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPreviousRelease } from '../helpers/previous-release.js';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
};

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    env: GIT_ENV,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();

function commit(repo: string, message: string): string {
  writeFileSync(join(repo, 'package.json'), JSON.stringify({ version: message }));
  git(repo, 'add', 'package.json');
  git(repo, 'commit', '-q', '-m', message);
  return git(repo, 'rev-parse', 'HEAD');
}

const release = (version: string, commitLine: string) =>
  `## ${version} — 2026-11-28\n\nNotes.\n\n${commitLine}\n\n`;

describe('the previous release named by CHANGELOG.md', () => {
  let dir: string;
  let repo: string;
  const sha: Record<string, string> = {};

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-changelog-'));
    repo = join(dir, 'repo');
    git(dir, 'init', '-q', '-b', 'main', repo);
    sha.first = commit(repo, '0.1.0');
    sha.second = commit(repo, '0.2.0');
    git(repo, 'checkout', '-q', '-b', 'side');
    sha.side = commit(repo, '0.2.1-side');
    git(repo, 'checkout', '-q', 'main');
    sha.head = commit(repo, '0.3.0');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const changelog = (root: string, text: string) =>
    writeFileSync(join(root, 'CHANGELOG.md'), `# Changelog\n\n${text}`);

  test('is the newest release before HEAD on its own history: placeholders, HEAD and other branches are passed over', () => {
    changelog(
      repo,
      '## Unreleased\n\n' +
        release('0.4.0', 'Commit: `<40-hex sha>`') +
        release('0.3.0', `Commit: \`${sha.head}\``) +
        release('0.2.1', `Commit: \`${sha.side}\``) +
        release('0.2.0', `Commit: \`${sha.second}\``) +
        release('0.1.0', `Commit: \`${sha.first}\``),
    );
    expect(findPreviousRelease(repo, {})).toEqual({
      release: { version: '0.2.0', commit: sha.second },
      source: 'CHANGELOG.md',
    });
  });

  test('SVC_PREVIOUS_RELEASE_COMMIT names it instead, by any name git resolves', () => {
    changelog(repo, release('0.1.0', `Commit: \`${sha.first}\``));
    expect(findPreviousRelease(repo, { SVC_PREVIOUS_RELEASE_COMMIT: sha.first!.slice(0, 7) })).toEqual({
      release: { version: '0.1.0', commit: sha.first },
      source: 'SVC_PREVIOUS_RELEASE_COMMIT',
    });
    // Not in the CHANGELOG: the version is that commit's package.json's.
    expect(findPreviousRelease(repo, { SVC_PREVIOUS_RELEASE_COMMIT: 'side' })).toMatchObject({
      release: { version: '0.2.1-side', commit: sha.side },
    });
  });

  test('without a release to build, the suite is skipped with the reason', () => {
    changelog(repo, '## Unreleased\n\nNothing yet.\n\n' + release('0.1.0', 'Commit: `TBD`'));
    expect(findPreviousRelease(repo, {})).toEqual({
      skip: expect.stringContaining('CHANGELOG.md names no earlier release'),
    });
  });

  test('a commit a full clone lacks is a failure; one a shallow clone lacks is a skip', () => {
    const unknown = 'f'.repeat(40);
    changelog(repo, release('0.2.0', `Commit: \`${unknown}\``));
    expect(() => findPreviousRelease(repo, {})).toThrow(
      `commit ${unknown} of release 0.2.0 is not in this repository`,
    );

    const shallow = join(dir, 'shallow');
    git(dir, 'clone', '-q', '--depth', '1', `file://${repo}`, shallow);
    changelog(shallow, release('0.2.0', `Commit: \`${sha.second}\``));
    expect(findPreviousRelease(shallow, {})).toEqual({
      skip: expect.stringContaining(`the clone is shallow and lacks commit ${sha.second} of release 0.2.0`),
    });
  });
});
