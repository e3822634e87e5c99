import type { Readable, Writable } from 'node:stream';

/** What a command may touch of the outside world; `main` passes the real process. */
export interface CliIo {
  env: Record<string, string | undefined>;
  cwd: string;
  stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  stdout: Writable;
  stderr: Writable;
}

export function processIo(): CliIo {
  return {
    env: process.env,
    cwd: process.cwd(),
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
  };
}

/** One line of normal output. */
export function out(io: CliIo, line: string): void {
  io.stdout.write(`${line}\n`);
}

/** Notices that must not mix with `--json` output on stdout. */
export function note(io: CliIo, line: string): void {
  io.stderr.write(`${line}\n`);
}
