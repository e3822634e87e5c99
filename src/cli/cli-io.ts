import type { Readable, Writable } from 'node:stream';
import { terminalText } from './terminal-text.js';

/** What a command may touch of the outside world; `main` passes the real process. */
export interface CliIo {
  env: Record<string, string | undefined>;
  cwd: string;
  stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean; columns?: number };
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

/** One line of normal output; control characters in it are shown escaped (terminal-text.ts). */
export function out(io: CliIo, line: string): void {
  io.stdout.write(`${terminalText(line, { keepNewlines: true })}\n`);
}

/** Notices that must not mix with `--json` output on stdout. */
export function note(io: CliIo, line: string): void {
  io.stderr.write(`${terminalText(line, { keepNewlines: true })}\n`);
}

/**
 * The width tables must fit: the terminal's, or `COLUMNS` when set (e.g. `COLUMNS=100 svc … | less`);
 * undefined when stdout is no terminal and nothing says otherwise, so piped output is never cut.
 */
export function outputWidth(io: CliIo): number | undefined {
  const fromEnv = Number(io.env.COLUMNS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return io.stdout.isTTY && io.stdout.columns ? io.stdout.columns : undefined;
}
