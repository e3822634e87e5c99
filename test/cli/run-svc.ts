import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// jest runs from the repository root; tsx is loaded by URL so the child may run in any directory.
const root = process.cwd();
const tsxLoader = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const entry = join(root, 'src', 'cli', 'main-entry.ts');

export interface SvcResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SvcOptions {
  home: string;
  cwd?: string;
  input?: string;
  env?: Record<string, string>;
}

/** Starts the CURRENT `svc` source as its own process, with its own HOME and XDG_CONFIG_HOME. */
export function spawnSvc(args: string[], o: SvcOptions): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', tsxLoader, entry, ...args], {
    cwd: o.cwd ?? o.home,
    env: { PATH: process.env.PATH ?? '', HOME: o.home, XDG_CONFIG_HOME: `${o.home}/config`, ...o.env },
  });
}

/** Runs `svc` as a user would and waits for it to exit. stdin is a pipe, never a terminal. */
export function runSvc(args: string[], o: SvcOptions): Promise<SvcResult> {
  return new Promise((resolve, reject) => {
    const child = spawnSvc(args, o);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(o.input ?? '');
  });
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Starts the CURRENT `svc` source on a pseudo-terminal (util-linux `script`); its output is the screen. */
export function spawnSvcInTerminal(args: string[], o: SvcOptions): ChildProcessWithoutNullStreams {
  const command = [process.execPath, '--import', tsxLoader, entry, ...args].map(shellQuote).join(' ');
  return spawn('script', ['-qec', command, '/dev/null'], {
    cwd: o.cwd ?? o.home,
    env: { PATH: process.env.PATH ?? '', HOME: o.home, XDG_CONFIG_HOME: `${o.home}/config`, ...o.env },
  });
}

/**
 * Runs `svc` on a pseudo-terminal (util-linux `script`), typing each reply once its prompt has
 * appeared, as a person would. Returns everything the terminal showed.
 */
export function runSvcInTerminal(
  args: string[],
  o: SvcOptions,
  replies: [prompt: string, reply: string][],
): Promise<{ code: number | null; screen: string }> {
  const command = [process.execPath, '--import', tsxLoader, entry, ...args].map(shellQuote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: o.cwd ?? o.home,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: o.home,
        XDG_CONFIG_HOME: `${o.home}/config`,
        TERM: 'dumb',
        ...o.env,
      },
    });
    let screen = '';
    let next = 0;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      screen += d;
      const pending = replies[next];
      if (pending && screen.split(pending[0]).length - 1 > countBefore(next)) {
        next++;
        child.stdin.write(`${pending[1]}\r`);
      }
    });
    // The n-th reply answers the n-th occurrence of its prompt among earlier identical prompts.
    const countBefore = (n: number) => replies.slice(0, n).filter(([p]) => p === replies[n]![0]).length;
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, screen }));
  });
}
