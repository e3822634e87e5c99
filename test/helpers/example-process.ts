import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { waitFor } from './wait-for.js';

export interface ExampleProcess {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  /** Its stdout so far. */
  stdout(): string;
  /** Resolves with the first stdout line matching `pattern` (its first group, if any). */
  line(pattern: RegExp, timeout?: number): Promise<string>;
  /** The exit code, once it has exited. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Writes the controller's CA where `NODE_EXTRA_CA_CERTS` can point, as a user would. */
export function writeCaFile(dir: string, caPem: string): string {
  const file = join(dir, 'example-ca.pem');
  writeFileSync(file, caPem);
  return file;
}

/**
 * Runs `node examples/<path> args` as its own process, the way its README says, with the repo's
 * node_modules (found by Node's resolution from the example's folder).
 */
export function runExample(path: string, args: string[], env: Record<string, string>): ExampleProcess {
  const child = spawn(process.execPath, [resolve('examples', path), ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    stdout += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let code: number | null | undefined;
  const exited = new Promise<number | null>((r) =>
    child.on('exit', (c) => {
      code = c;
      r(c);
    }),
  );
  return {
    child,
    output: () => out,
    stdout: () => stdout,
    exited,
    line: (pattern, timeout = 60_000) =>
      waitFor(
        () => {
          if (code !== undefined) throw new Error(`${path} exited (${code}): ${out}`);
          const m = stdout
            .split('\n')
            .map((l) => pattern.exec(l))
            .find(Boolean);
          return m ? (m[1] ?? m[0]) : undefined;
        },
        { timeout, what: `${path} to print ${pattern}` },
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n--- ${path} output ---\n${out}`);
      }),
    async stop() {
      if (code === undefined) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}
