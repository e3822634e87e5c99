import { describe, test } from '@jest/globals';
import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * A program outside node_modules that some suites run. `path` is absolute (checked as is) or a
 * bare name (looked up on PATH); `install` is the one line that makes it available.
 */
export interface SystemBinary {
  path: string;
  install: string;
}

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** The programs the suites need beyond Node.js; the README's test table lists the same. */
export const BINARIES = {
  chromium: {
    path: process.env.SVC_CHROMIUM ?? '/usr/bin/chromium',
    install: 'apt-get install chromium (or set SVC_CHROMIUM)',
  },
  haproxy: {
    path: process.env.HAPROXY_BIN ?? '/usr/sbin/haproxy',
    install: 'apt-get install haproxy (or set HAPROXY_BIN)',
  },
  curl: { path: 'curl', install: 'apt-get install curl' },
  jq: { path: 'jq', install: 'apt-get install jq' },
  openssl: { path: 'openssl', install: 'apt-get install openssl' },
  python3: { path: 'python3', install: 'apt-get install python3' },
  initdb: {
    path: join(PG_BIN, 'initdb'),
    install: 'apt-get install postgresql-15 (or set PG_BIN to its bin directory)',
  },
} satisfies Record<string, SystemBinary>;

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function isInstalled(binary: SystemBinary): boolean {
  if (isAbsolute(binary.path)) return executable(binary.path);
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir !== '' && executable(join(dir, binary.path)));
}

/** Under CI a missing program is a broken runner, not a reason to skip. */
const onCi = () => Boolean(process.env.CI) && process.env.CI !== 'false';

/** One line: which programs are missing and how to get each. */
function whatIsMissing(binaries: SystemBinary[]): string | undefined {
  const missing = binaries.filter((b) => !isInstalled(b));
  if (missing.length === 0) return undefined;
  return missing.map((b) => `${b.path} is not installed: ${b.install}`).join('; ');
}

type DescribeLike = (title: string, fn: () => void) => void;
type TestLike = (title: string, fn: () => Promise<void> | void, timeout?: number) => void;

/**
 * `describe` (or `base`) when every program is installed. Otherwise the suite is skipped with one
 * line on stderr naming what to install, except under CI=true, where it fails with that line.
 */
export function describeNeeding(binaries: SystemBinary[], base: DescribeLike = describe): DescribeLike {
  const missing = whatIsMissing(binaries);
  if (!missing || base === describe.skip) return base;
  if (onCi()) {
    return (title) =>
      describe(title, () => {
        test('has the programs it runs', () => {
          throw new Error(missing);
        });
      });
  }
  return (title, fn) => {
    process.stderr.write(`skipped: ${title} (${missing})\n`);
    describe.skip(`${title} (skipped: ${missing})`, fn);
  };
}

/** The same for one test: `base` (default `test`) when installed, else skipped or, under CI, failed. */
export function testNeeding(binaries: SystemBinary[], base: TestLike = test): TestLike {
  const missing = whatIsMissing(binaries);
  if (!missing || base === test.skip) return base;
  if (onCi()) {
    return (title) =>
      test(title, () => {
        throw new Error(missing);
      });
  }
  return (title, fn, timeout) => {
    process.stderr.write(`skipped: ${title} (${missing})\n`);
    test.skip(`${title} (skipped: ${missing})`, fn, timeout);
  };
}
