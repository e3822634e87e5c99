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

/** Figures measured beside the pairs, for the targets table. */
export interface BenchExtras {
  postgres: boolean;
  /** CPU of one Argon2id verify with the service's parameters, measured in the bench process. */
  argon2CpuMs?: number;
  /** The service's RSS once started and seeded, idle. */
  idleRssMb?: number;
  /** The service's peak RSS (VmHWM) after the login scenario. */
  loginPeakRssMb?: number;
}

// Keycloak's published sizing: password logins and refresh grants per second per vCPU.
const KEYCLOAK = { loginsPerCore: 15, refreshesPerCore: 120 };

/**
 * The targets, each with the figure this run measured and whether it meets it. A target
 * needing a scenario that did not run, or PostgreSQL on an embedded run, is "not measured".
 */
export function formatTargets(reports: ScenarioReport[], x: BenchExtras): string {
  const by = (key: string) => reports.find((r) => r.scenario.key === key);
  const ratio = (key: string) => {
    const r = by(key);
    return r ? median(r.result.throughputRatios) : Number.NaN;
  };
  const rows: string[][] = [['target', 'measured', 'goal', 'result']];
  const add = (what: string, value: number, shown: string, goal: string, pass: (v: number) => boolean) =>
    rows.push([
      what,
      Number.isFinite(value) ? shown : 'not measured',
      goal,
      Number.isFinite(value) ? (pass(value) ? 'PASS' : 'FAIL') : '—',
    ]);
  const bearer = ratio('bearer');
  add('bearer current-api-session vs (a)', bearer, `${num(bearer, 2)}x`, '≥ 1.0x', (v) => v >= 1.0);
  const ci = ratio('current-identity');
  add('bearer current-identity vs (a)', ci, `${num(ci, 2)}x`, '≥ 0.8x', (v) => v >= 0.8);
  const legacy = ratio('legacy') / bearer;
  add('legacy svc-session vs the bearer figure', legacy, `${num(legacy, 2)}x`, '≥ 0.8x', (v) => v >= 0.8);
  const login = ratio('login');
  add('full login vs (b)', login, `${num(login, 2)}x`, '≥ 0.75x', (v) => v >= 0.75);
  const l = by('login')?.result;
  const beyond =
    l && x.argon2CpuMs !== undefined
      ? (l.service.cpuMsPerOp - x.argon2CpuMs) / (l.baseline.cpuMsPerOp - x.argon2CpuMs)
      : Number.NaN;
  add(
    'login CPU beyond Argon2id, service / baseline',
    beyond,
    `${num(beyond, 2)}x (${ms(l ? l.service.cpuMsPerOp - x.argon2CpuMs! : NaN)} / ${ms(l ? l.baseline.cpuMsPerOp - x.argon2CpuMs! : NaN)} ms; Argon2id ${ms(x.argon2CpuMs ?? NaN)} ms)`,
    '≤ 1.5x',
    (v) => v <= 1.5,
  );
  const refresh = x.postgres ? ratio('refresh') : Number.NaN;
  add('refresh grant vs (b), PostgreSQL', refresh, `${num(refresh, 2)}x`, '≥ 0.6x', (v) => v >= 0.6);
  const r = by('refresh')?.result.service;
  const sql = r ? r.statementsPerOp - r.transactionControlPerOp : Number.NaN;
  add('SQL statements per refresh grant (BEGIN/COMMIT apart)', sql, num(sql, 2), '≤ 3', (v) => v <= 3);
  add(
    'RSS idle after seeding',
    x.idleRssMb ?? NaN,
    `${num(x.idleRssMb ?? NaN)} MB`,
    '≤ 150 MB',
    (v) => v <= 150,
  );
  add(
    'RSS peak through the login load',
    x.loginPeakRssMb ?? NaN,
    `${num(x.loginPeakRssMb ?? NaN)} MB`,
    '≤ 400 MB',
    (v) => v <= 400,
  );
  const loginsPerCore = l ? 1000 / l.service.cpuMsPerOp : Number.NaN;
  add(
    'logins/s per core (1 s / CPU per login)',
    loginsPerCore,
    num(loginsPerCore, 1),
    `> ${2 * KEYCLOAK.loginsPerCore} (2x Keycloak's ${KEYCLOAK.loginsPerCore})`,
    (v) => v > 2 * KEYCLOAK.loginsPerCore,
  );
  const refreshesPerCore = r ? 1000 / r.cpuMsPerOp : Number.NaN;
  add(
    'refreshes/s per core',
    refreshesPerCore,
    num(refreshesPerCore, 0),
    `> ${2 * KEYCLOAK.refreshesPerCore} (2x Keycloak's ${KEYCLOAK.refreshesPerCore})`,
    (v) => v > 2 * KEYCLOAK.refreshesPerCore,
  );

  const perScenario = reports.map(({ scenario, result: { service: s } }) => {
    const statements = Number.isFinite(s.statementsPerOp)
      ? `${num(s.statementsPerOp, 2)} SQL statements/op (${num(s.transactionControlPerOp, 2)} of them BEGIN/COMMIT)`
      : 'SQL statements not counted (embedded database)';
    return `  ${scenario.key}: p99 ${ms(s.p99Ms)} ms, ${statements}`;
  });
  return [
    table(rows),
    '',
    'service per scenario:',
    ...perScenario,
    "  (statements counted at the wire between the service and PostgreSQL; the process's timers (revocation catch-up, key watcher, janitors) left out)",
    '  not measured here: identity list at 1,000,000 identities (npm run bench -- --scale); start time (docs/benchmarks.md, "Start and memory").',
  ].join('\n');
}
