import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Group and other bits: none may be set on anything in the data directory. */
const SHARED_BITS = 0o077;

/**
 * Directories 0700 and files 0600 wherever group or others had any bit. Returns the paths that
 * had to be changed.
 */
export function tightenTree(root: string): string[] {
  const tightened: string[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink()) return;
    if ((stat.mode & SHARED_BITS) !== 0) {
      chmodSync(path, stat.isDirectory() ? 0o700 : 0o600);
      tightened.push(path);
    }
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(root);
  return tightened;
}

/**
 * Makes the data directory private to the service's user before anything is written to it: it
 * holds the embedded database (whose WAL carries live data), the master key and the PKI. The
 * umask covers what Node writes from now on; an existing tree is tightened. Returns the paths
 * that were readable by others.
 *
 * PGlite is a WASM build with its own file layer: it unpacks its initial cluster with mode 0666
 * and chmods explicitly, which no umask prevents, so the caller tightens the tree again once the
 * database is open (see `tightenTree`).
 */
export function preparePrivateDataDir(dataDir: string): string[] {
  process.umask(SHARED_BITS);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return tightenTree(dataDir);
}
