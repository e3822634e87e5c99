import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../helpers/wait-for.js';
import { spawnSvc, spawnSvcInTerminal, type SvcResult } from './run-svc.js';

/** `svc login --device` running as its own process, with what it printed so far. */
export interface DeviceLoginProcess {
  child: ChildProcessWithoutNullStreams;
  /** The `verification_uri_complete` it prints for the person, once printed. */
  link(): Promise<string>;
  /** The user code it prints, once printed. */
  userCode(): Promise<string>;
  done: Promise<SvcResult>;
}

/** `terminal`: on a pseudo-terminal of that environment (e.g. TERM, COLUMNS); else stdout is a pipe. */
export function startDeviceLogin(
  args: string[],
  home: string,
  terminal?: Record<string, string>,
): DeviceLoginProcess {
  const child = terminal ? spawnSvcInTerminal(args, { home, env: terminal }) : spawnSvc(args, { home });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  if (!terminal) child.stdin.end();
  let code: number | null | undefined;
  const done = new Promise<SvcResult>((resolve) =>
    child.on('close', (c) => {
      code = c;
      resolve({ code: c, stdout, stderr });
    }),
  );
  // Printed on stdout, or on stderr with --json.
  const printed = (pattern: RegExp, what: string) =>
    waitFor(
      () => {
        const found = pattern.exec(stdout + stderr)?.[1];
        if (found === undefined && code !== undefined)
          throw new Error(`svc exited (${code}) before printing ${what}: ${stdout}${stderr}`);
        return found;
      },
      { timeout: 30_000, what },
    );
  return {
    child,
    link: () => printed(/^or open (https:\S+?)\r?$/m, 'the verification link'),
    userCode: () => printed(/enter the code ([A-Z]{4}-[A-Z]{4})\r?$/m, 'the user code'),
    done,
  };
}

export const sessionFileOf = (home: string) => join(home, 'config', 'svc', 'session.json');
export const readSession = (home: string) => JSON.parse(readFileSync(sessionFileOf(home), 'utf8'));
export const writeSession = (home: string, session: unknown) =>
  writeFileSync(sessionFileOf(home), `${JSON.stringify(session, null, 2)}\n`, { mode: 0o600 });
