import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `npx tsx bench/profile-summary.ts FILE.cpuprofile|DIR [N]`: the top N frames of a V8 CPU profile
 * by self time, then self time summed per package or source file, as shares of the busy time
 * (idle samples excluded). Written for the profiles `npm run bench -- --cpu-prof DIR` leaves; given
 * a directory, it reads its largest profile (the main thread's).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

// Loading and compiling modules (tsx, the ESM loader): start-up, not the load under test.
const MODULE_LOADING =
  /node:internal\/(modules|deps\/cjs-module-lexer|source_map)|\/node_modules\/(tsx|esbuild)\//;
const START_UP = '(module loading, start-up)';

/** `node_modules/<package>`, `src/…` or `bench/…` file, `node:` internals, or V8's own entries. */
function owner(url: string, name: string): string {
  if (MODULE_LOADING.test(url)) return START_UP;
  if (!url) return name.startsWith('(') ? name : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const own = url.match(/\/((?:src|bench)\/.*)$/);
  if (own) return own[1]!;
  return url.startsWith('node:') ? url : url.replace(/^file:\/\//, '');
}

const frameLabel = (f: CallFrame) =>
  MODULE_LOADING.test(f.url)
    ? START_UP
    : `${f.functionName || '(anonymous)'} ${owner(f.url, f.functionName)}${f.url ? `:${f.lineNumber + 1}` : ''}`;

export function summarise(profile: CpuProfile, top: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const frames = new Map<string, number>();
  const owners = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const { callFrame } = byId.get(id)!;
    if (callFrame.functionName === '(idle)') continue;
    busy += us;
    const label = frameLabel(callFrame);
    frames.set(label, (frames.get(label) ?? 0) + us);
    const o = owner(callFrame.url, callFrame.functionName);
    owners.set(o, (owners.get(o) ?? 0) + us);
  }
  // Inclusive time of our own functions (src/): self plus everything they called, each sample
  // counted once per function even under recursion.
  const inclusive = new Map<string, number>();
  const root = profile.nodes[0]!;
  const subtree = new Map<number, number>();
  const total = (n: ProfileNode): number => {
    let t = self.get(n.id) ?? 0;
    for (const c of n.children ?? []) t += total(byId.get(c)!);
    subtree.set(n.id, t);
    return t;
  };
  total(root);
  const open = new Set<string>();
  const walk = (n: ProfileNode) => {
    const label = /\/src\//.test(n.callFrame.url) ? frameLabel(n.callFrame) : undefined;
    const entered = label !== undefined && !open.has(label);
    if (entered) {
      open.add(label);
      inclusive.set(label, (inclusive.get(label) ?? 0) + subtree.get(n.id)!);
    }
    for (const c of n.children ?? []) walk(byId.get(c)!);
    if (entered) open.delete(label);
  };
  walk(root);

  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([k, us]) =>
          `${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`,
      );
  return [
    `busy ${(busy / 1e6).toFixed(1)} s`,
    `top ${top} frames by self time:`,
    ...rows(frames),
    `self time by package / file:`,
    ...rows(owners),
    `inclusive time of the service's own functions (src/):`,
    ...rows(inclusive),
  ].join('\n');
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const [file, n] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: npx tsx bench/profile-summary.ts FILE.cpuprofile|DIR [N]\n');
    process.exit(2);
  }
  const path = statSync(file).isDirectory()
    ? readdirSync(file)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(file, f))
        .sort((a, b) => statSync(b).size - statSync(a).size)[0]
    : file;
  if (!path) throw new Error(`no .cpuprofile in ${file}`);
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  process.stdout.write(`${summarise(profile, Number(n ?? 25))}\n`);
}
