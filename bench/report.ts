import type { PairsResult, SideSummary } from './interleaved-pairs.js';
import type { Scenario } from './scenarios.js';
import { median } from './stats.js';

export interface ScenarioReport {
  scenario: Scenario;
  baselineName: string;
  result: PairsResult;
}

const num = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '—';

const ms = (n: number) => (n >= 100 ? num(n, 0) : n >= 10 ? num(n, 1) : num(n, 2));

function side(s: SideSummary, unit: string): string {
  return `${num(s.perSecond)} ${unit}/s, p50 ${ms(s.p50Ms)} / p99 ${ms(s.p99Ms)} ms`;
}

/** CPU per operation, with the PostgreSQL backends' share when there is one. */
function cpu(s: SideSummary): string {
  return `${ms(s.cpuMsPerOp)} ms${s.dbCpuMsPerOp > 0 ? ` (PostgreSQL ${ms(s.dbCpuMsPerOp)})` : ''}`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]!))
      .join(' | ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.slice(1).map(line)].join(
    '\n',
  );
}

/** The plain-text table: figures side by side, ratios as the median of the pairs' own ratios. */
export function formatReport(reports: ScenarioReport[]): string {
  const header = [
    'scenario',
    'service',
    'baseline',
    'ratio (median of pairs)',
    'service CPU/op',
    'baseline CPU/op',
    'CPU/op ratio',
  ];
  const rows = reports.map(({ scenario, baselineName, result }) => [
    scenario.title,
    side(result.service, scenario.unit),
    `${baselineName}: ${side(result.baseline, scenario.unit)}`,
    `${num(median(result.throughputRatios), 2)}x`,
    cpu(result.service),
    cpu(result.baseline),
    `${num(median(result.cpuRatios), 2)}x`,
  ]);
  const pairLines = reports.map(
    ({ scenario, result }) =>
      `  ${scenario.key}: throughput ratios ${result.throughputRatios.map((r) => r.toFixed(2)).join(' ')}; ` +
      `CPU/op ratios ${result.cpuRatios.map((r) => r.toFixed(2)).join(' ')}`,
  );
  return `${table([header, ...rows])}\n\nper pair (service/baseline):\n${pairLines.join('\n')}`;
}
