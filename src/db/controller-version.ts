import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'svc-controller';

let cached: { version: string | undefined } | undefined;

/**
 * The release this code is (package.json `version`), recorded by a migration that raises the
 * compatibility level and named when a start is refused. The file is looked for upwards from here,
 * since the sources (`src/db/`) and the build (`dist/src/db/`) sit at different depths; undefined
 * when it cannot be found or read.
 */
export function controllerVersion(): string | undefined {
  cached ??= { version: findVersion() };
  return cached.version;
}

function findVersion(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const parsed = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
        if (parsed.name === PACKAGE_NAME && typeof parsed.version === 'string') return parsed.version;
      } catch {
        // An unreadable package.json higher up is not ours; keep looking.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
