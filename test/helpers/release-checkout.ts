import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
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
 * between two nearby releases), else one `npm ci` per lock file, kept by its hash; the marker
 * file is written last, so an install cut short is redone rather than used.
 */
function linkDependencies(root: string, dir: string): string {
  const hash = lockHash(dir);
  if (hash === lockHash(root)) {
    symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'), 'dir');
    return `same package-lock.json as this checkout (${hash}): its node_modules linked`;
  }
  const cached = join(cacheRoot(), hash);
  const marker = join(cached, '.installed');
  let done = `package-lock.json ${hash}: node_modules from the cache ${cached}`;
  if (!existsSync(marker)) {
    rmSync(cached, { recursive: true, force: true });
    mkdirSync(cached, { recursive: true });
    for (const file of ['package.json', 'package-lock.json', '.npmrc']) {
      if (existsSync(join(dir, file))) copyFileSync(join(dir, file), join(cached, file));
    }
    const started = Date.now();
    execFileSync('npm', ['ci', '--ignore-scripts=false', '--no-audit', '--no-fund'], {
      cwd: cached,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    writeFileSync(marker, new Date().toISOString());
    done = `package-lock.json ${hash}: npm ci into ${cached} in ${Math.round((Date.now() - started) / 1000)} s`;
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

/**
 * `git worktree add --detach` of the release under the temporary directory; a checkout left by a
 * crashed run is pruned and replaced first.
 */
export function checkoutRelease(root: string, release: Release): ReleaseCheckout {
  const dir = join(tmpdir(), `svc-prev-${release.commit.slice(0, 12)}`);
  git(root, ['worktree', 'prune']);
  if (existsSync(dir)) {
    rmSync(join(dir, 'node_modules'), { force: true });
    try {
      git(root, ['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(root, ['worktree', 'prune']);
    }
  }
  git(root, ['worktree', 'add', '--detach', dir, release.commit]);
  const remove = () => {
    // The link first, on its own: nothing below may reach through it into shared dependencies.
    rmSync(join(dir, 'node_modules'), { force: true });
    try {
      git(root, ['worktree', 'remove', '--force', dir]);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(root, ['worktree', 'prune']);
    }
  };
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
