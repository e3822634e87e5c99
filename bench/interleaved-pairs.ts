import { runClosedLoop, type LoopLimits, type LoopResult } from './load/closed-loop.js';
import type { PreparedSide } from './scenarios.js';
import { median, percentile } from './stats.js';

export interface RunResult extends LoopResult {
  perSecond: number;
  /** Server CPU (user + system) per successful operation, in milliseconds. */
  cpuMsPerOp: number;
  /** The part of cpuMsPerOp spent in PostgreSQL backends. */
  dbCpuMsPerOp: number;
  /** SQL statements per successful operation (NaN when not counted), BEGIN/COMMIT included. */
  statementsPerOp: number;
  /** The BEGIN/COMMIT/ROLLBACK among them. */
  transactionControlPerOp: number;
}

export interface SideSummary {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  cpuMsPerOp: number;
  dbCpuMsPerOp: number;
  statementsPerOp: number;
  transactionControlPerOp: number;
  ops: number;
}

export interface Ratios {
  /** service / other throughput, one per pair, in pair order. */
  throughputRatios: number[];
  cpuRatios: number[];
}

export interface PairsResult extends Ratios {
  service: SideSummary;
  baseline: SideSummary;
  /** A side run once after each pair for reference, with the service's ratios to it. */
  reference?: Ratios & { summary: SideSummary };
  errors: string[];
}

/** One measured run: the target's CPU is read just before and just after the load. */
export async function measure(side: PreparedSide, limits: LoopLimits): Promise<RunResult> {
  const before = await side.target.cpu();
  const loop = await runClosedLoop(side.workers, limits);
  const after = await side.target.cpu();
  const perOp = (ms: number) => (loop.ops > 0 ? ms / loop.ops : Number.NaN);
  return {
    ...loop,
    perSecond: loop.ops / (loop.elapsedMs / 1000),
    cpuMsPerOp: perOp(after.totalMs - before.totalMs),
    dbCpuMsPerOp: perOp(after.databaseMs - before.databaseMs),
    statementsPerOp:
      after.statements && before.statements
        ? perOp(after.statements.all - before.statements.all)
        : Number.NaN,
    transactionControlPerOp:
      after.statements && before.statements
        ? perOp(after.statements.transactionControl - before.statements.transactionControl)
        : Number.NaN,
  };
}

function summarise(runs: RunResult[]): SideSummary {
  const all = new Float64Array(runs.reduce((n, r) => n + r.latenciesMs.length, 0));
  let offset = 0;
  for (const r of runs) {
    all.set(r.latenciesMs, offset);
    offset += r.latenciesMs.length;
  }
  return {
    perSecond: median(runs.map((r) => r.perSecond)),
    p50Ms: percentile(all, 50),
    p99Ms: percentile(all, 99),
    cpuMsPerOp: median(runs.map((r) => r.cpuMsPerOp)),
    dbCpuMsPerOp: median(runs.map((r) => r.dbCpuMsPerOp)),
    statementsPerOp: median(runs.map((r) => r.statementsPerOp)),
    transactionControlPerOp: median(runs.map((r) => r.transactionControlPerOp)),
    ops: all.length,
  };
}

/**
 * Warm-up of both sides, then `pairs` pairs with the order swapped every other pair
 * (S B, B S, S B …), so drift in the machine's background load hits both sides alike
 * (on a shared VM the host steals up to 40 % of the CPU at times). A reference side, if any,
 * runs after each pair (S B R, B S R …): it never splits a pair.
 */
export async function runInterleavedPairs(
  service: PreparedSide,
  baseline: PreparedSide,
  o: { pairs: number; runMs: number; warmupMs: number; maxOps: number; onRun?: (line: string) => void },
  reference?: PreparedSide,
): Promise<PairsResult> {
  const errors: string[] = [];
  for (const side of reference ? [service, baseline, reference] : [service, baseline]) {
    const warmup = await measure(side, { durationMs: o.warmupMs, maxOps: o.maxOps });
    if (warmup.errors > 0) errors.push(`${side.target.label} (warm-up): ${warmup.firstError}`);
  }
  const runs = { service: [] as RunResult[], baseline: [] as RunResult[], reference: [] as RunResult[] };
  const throughputRatios: number[] = [];
  const cpuRatios: number[] = [];
  const referenceRatios: Ratios = { throughputRatios: [], cpuRatios: [] };
  for (let pair = 0; pair < o.pairs && errors.length === 0; pair++) {
    const order = pair % 2 === 0 ? (['service', 'baseline'] as const) : (['baseline', 'service'] as const);
    const result: Partial<Record<'service' | 'baseline', RunResult>> = {};
    for (const which of order) {
      const side = which === 'service' ? service : baseline;
      const run = await measure(side, { durationMs: o.runMs, maxOps: o.maxOps });
      if (run.errors > 0) errors.push(`${side.target.label}: ${run.errors} failed, first: ${run.firstError}`);
      result[which] = run;
      runs[which].push(run);
    }
    throughputRatios.push(result.service!.perSecond / result.baseline!.perSecond);
    cpuRatios.push(result.service!.cpuMsPerOp / result.baseline!.cpuMsPerOp);
    let referenceLine = '';
    if (reference) {
      const run = await measure(reference, { durationMs: o.runMs, maxOps: o.maxOps });
      if (run.errors > 0)
        errors.push(`${reference.target.label}: ${run.errors} failed, first: ${run.firstError}`);
      runs.reference.push(run);
      referenceRatios.throughputRatios.push(result.service!.perSecond / run.perSecond);
      referenceRatios.cpuRatios.push(result.service!.cpuMsPerOp / run.cpuMsPerOp);
      referenceLine = `, then reference ${run.perSecond.toFixed(0)}/s`;
    }
    o.onRun?.(
      `  pair ${pair + 1}/${o.pairs} (${order.join(' → ')}): ` +
        `service ${result.service!.perSecond.toFixed(0)}/s, baseline ${result.baseline!.perSecond.toFixed(0)}/s` +
        referenceLine,
    );
  }
  return {
    service: summarise(runs.service),
    baseline: summarise(runs.baseline),
    ...(reference ? { reference: { ...referenceRatios, summary: summarise(runs.reference) } } : {}),
    throughputRatios,
    cpuRatios,
    errors,
  };
}
