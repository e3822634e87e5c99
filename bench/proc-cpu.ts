import { readFile } from 'node:fs/promises';

// /proc reports CPU in USER_HZ ticks, which Linux fixes at 100 for user space (proc(5)).
const MS_PER_TICK = 10;

/**
 * utime + stime of a process in milliseconds, all threads included (the libuv pool that runs
 * Argon2id, PGlite's WASM, tsx's loader thread). Undefined once the process is gone.
 */
export async function processCpuMs(pid: number): Promise<number | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name may contain spaces and parentheses: fields are counted after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of proc(5) are the 12th and 13th after the name.
  return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
}

/**
 * CPU used so far by a changing set of processes (a database pool's backends come and go).
 * A process that appears is counted from its start; one that disappears keeps its last reading,
 * so it is undercounted by at most what it used since the previous sample.
 */
export function createCpuAccumulator() {
  const lastSeen = new Map<number, number>();
  return async function totalCpuMs(pids: number[]): Promise<number> {
    for (const pid of pids) {
      const ms = await processCpuMs(pid);
      if (ms !== undefined) lastSeen.set(pid, ms);
    }
    let total = 0;
    for (const ms of lastSeen.values()) total += ms;
    return total;
  };
}

/** Resident set size now and its peak since the process started (VmRSS, VmHWM of proc(5)), in MB. */
export async function processMemoryMb(pid: number): Promise<{ rssMb: number; peakMb: number } | undefined> {
  let status: string;
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}
