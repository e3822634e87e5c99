import { spawn, type ChildProcess } from 'node:child_process';

const OUTPUT_TAIL_CHARS = 20_000;
const STOP_GRACE_MS = 10_000;

export interface ChildTarget {
  child: ChildProcess;
  pid: number;
  /** The last output of the process (stdout and stderr), for error messages. */
  output(): string;
  /** Resolves with the first line matching `pattern`; rejects on exit or after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL if it has not exited after a grace period. */
  stop(): Promise<void>;
}

/**
 * A TypeScript entry point run as `node --import tsx <file>`: the baselines run this way. Output
 * is always drained (a full pipe would stall a target that logs) and only its tail is kept.
 */
export function spawnTsChild(
  entry: string,
  env: Record<string, string>,
  cwd: string,
  /** Extra Node options before the entry, e.g. `--cpu-prof`. */
  nodeArgs: string[] = [],
): ChildTarget {
  return spawnNodeChild(['--import', 'tsx', entry], env, cwd, nodeArgs);
}

/** `node <args>`, e.g. a built entry point; see spawnTsChild. */
export function spawnNodeChild(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  nodeArgs: string[] = [],
): ChildTarget {
  const entry = args[args.length - 1] ?? '';
  const child = spawn(process.execPath, [...nodeArgs, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${entry}`);
  let out = '';
  let pending = '';
  const lineWaiters = new Set<(line: string) => void>();
  const onData = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    out = (out + text).slice(-OUTPUT_TAIL_CHARS);
    if (lineWaiters.size === 0) return;
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) for (const waiter of lineWaiters) waiter(line);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  function waitForLine(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const done = (err?: Error, match?: RegExpMatchArray) => {
        clearTimeout(timer);
        lineWaiters.delete(onLine);
        child.off('exit', onExit);
        if (err) reject(err);
        else resolve(match!);
      };
      const onLine = (line: string) => {
        const match = line.match(pattern);
        if (match) done(undefined, match);
      };
      const onExit = (code: number | null) => done(new Error(`${entry} exited (${code}): ${out}`));
      const timer = setTimeout(
        () => done(new Error(`${entry} not ready in ${timeoutMs} ms: ${out}`)),
        timeoutMs,
      );
      lineWaiters.add(onLine);
      child.once('exit', onExit);
    });
  }

  async function stop(): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  return { child, pid: child.pid, output: () => out, waitForLine, stop };
}
