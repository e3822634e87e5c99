import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'svc-controller';

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The version of the nearest `package.json` named svc-controller above `dir`. Walked up rather
 * than a fixed `../package.json`: this module runs from `src/` under tsx and jest, and from
 * `dist/src/` once built (tsconfig.build.json keeps the tree under `dist/`), one level deeper.
 */
export function packageVersionAbove(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    const pkg = readJson(join(at, 'package.json')) as { name?: unknown; version?: unknown } | undefined;
    if (pkg?.name === PACKAGE_NAME && typeof pkg.version === 'string') return pkg.version;
    if (dirname(at) === at) throw new Error(`no package.json of ${PACKAGE_NAME} above ${dir}`);
  }
}

/** The running controller's version (semver), as `package.json` names it (CHANGELOG.md). */
export const controllerVersion: string = packageVersionAbove(dirname(fileURLToPath(import.meta.url)));

/** The Node.js runtime, e.g. `v24.21.0`. */
export const runtimeVersion: string = process.version;
