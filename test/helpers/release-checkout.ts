import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Release } from './previous-release.js';

/** A release checked out from this repository's history, with dependencies, runnable by tsx. */
export interface ReleaseCheckout {
  dir: string;
  /** What was done for its node_modules, in one line. */
  dependencies: string;
  /** The newest migration the release knows, by name (`024_webhook_delivery_due_index`). */
  newestMigration: string;
  remove(): void;
}

const git = (cwd: string, args: string[]) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

const lockHash = (dir: string) =>
  createHash('sha256')
    .update(readFileSync(join(dir, 'package-lock.json')))
    .digest('hex')
    .slice(0, 16);

/** Where installs of other lock files are kept between runs (the CI runner's cache, or a dev's). */
function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'svc-controller', 'prev-node-modules');
}

/**
 * node_modules for the checkout: the current one when the lock files match (the usual case
 * between two nearby releases), else one `npm ci` per lock file, kept by its hash.
 */
function linkDependencies(root: string, dir: string): string {
  const hash = lockHash(dir);
  if (hash === lockHash(root)) {
    symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'), 'dir');
    return `same package-lock.json as this checkout (${hash}): its node_modules linked`;
  }
  const cached = join(cacheRoot(), hash);
  let done = `package-lock.json ${hash}: node_modules from the cache ${cached}`;
  if (!existsSync(join(cached, 'node_modules'))) {
    // Installed aside and renamed into place: a run cut short leaves no half install under the
    // hash, and of two runs installing at once one rename wins and the other's copy is dropped.
    mkdirSync(cacheRoot(), { recursive: true });
    const scratch = mkdtempSync(`${cached}.installing-`);
    for (const file of ['package.json', 'package-lock.json', '.npmrc']) {
      if (existsSync(join(dir, file))) copyFileSync(join(dir, file), join(scratch, file));
    }
    const started = Date.now();
    execFileSync('npm', ['ci', '--ignore-scripts=false', '--no-audit', '--no-fund'], {
      cwd: scratch,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    try {
      renameSync(scratch, cached);
      done = `package-lock.json ${hash}: npm ci into ${cached} in ${Math.round((Date.now() - started) / 1000)} s`;
    } catch (err) {
      rmSync(scratch, { recursive: true, force: true });
      if (!existsSync(join(cached, 'node_modules'))) throw err;
    }
  }
  symlinkSync(join(cached, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return done;
}

/** Migration names sort as knex applies them: `NNN_name`, byte-wise. */
function newestMigrationOf(dir: string): string {
  const names = git(dir, ['ls-files', 'migrations'])
    .split('\n')
    .map((f) => /^migrations\/(\d{3}_[a-z0-9_]+)\.ts$/.exec(f)?.[1])
    .filter((n): n is string => n !== undefined)
    .sort();
  return names.at(-1) ?? '';
}

/** Removes a checkout: its node_modules link on its own first, so nothing reaches through it. */
function removeWorktree(root: string, dir: string): void {
  const modules = join(dir, 'node_modules');
  if (existsSync(modules) && lstatSync(modules).isSymbolicLink()) unlinkSync(modules);
  try {
    git(root, ['worktree', 'remove', '--force', dir]);
  } catch {
    rmSync(dir, { recursive: true, force: true });
    git(root, ['worktree', 'prune']);
  }
}

/**
 * `git worktree add --detach` of the release into a directory of its own under the temporary
 * directory (two runs at once do not share one); checkouts of crashed runs are pruned first.
 */
export function checkoutRelease(root: string, release: Release): ReleaseCheckout {
  git(root, ['worktree', 'prune']);
  const dir = mkdtempSync(join(tmpdir(), `svc-prev-${release.commit.slice(0, 12)}-`));
  git(root, ['worktree', 'add', '--detach', dir, release.commit]);
  const remove = () => removeWorktree(root, dir);
  try {
    return {
      dir,
      dependencies: linkDependencies(root, dir),
      newestMigration: newestMigrationOf(dir),
      remove,
    };
  } catch (err) {
    remove();
    throw err;
  }
}
