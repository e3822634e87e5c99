import type { PairsResult, Ratios, SideSummary } from './interleaved-pairs.js';
import type { Scenario } from './scenarios.js';
import { median } from './stats.js';

export interface ScenarioReport {
  scenario: Scenario;
  /** `(a)`, `(b)` or `(c)`: the baseline the service was paired with. */
  baselineName: string;
  /** The baseline run after each pair for reference (`(b)` beside `(c)`), if any. */
  referenceName?: string;
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
export function formatReport(reports: ScenarioReport[], postgres: boolean): string {
  const header = [
    'scenario',
    'service',
    'baseline',
    'ratio (median of pairs)',
    'service CPU/op',
    'baseline CPU/op',
    'CPU/op ratio',
  ];
  const rows = reports.flatMap(({ scenario, baselineName, referenceName, result }) => {
    const row = [
      scenario.title,
      side(result.service, scenario.unit),
      `${baselineName}: ${side(result.baseline, scenario.unit)}`,
      `${num(median(result.throughputRatios), 2)}x`,
      cpu(result.service),
      cpu(result.baseline),
      `${num(median(result.cpuRatios), 2)}x`,
    ];
    const ref = result.reference;
    if (!ref || !referenceName) return [row];
    return [
      row,
      [
        `  same, against ${referenceName} for reference`,
        '',
        `${referenceName}: ${side(ref.summary, scenario.unit)}`,
        `${num(median(ref.throughputRatios), 2)}x`,
        '',
        cpu(ref.summary),
        `${num(median(ref.cpuRatios), 2)}x`,
      ],
    ];
  });
  const pairLines = reports.flatMap(({ scenario, baselineName, referenceName, result }) => {
    const line = (name: string, r: Ratios) =>
      `  ${scenario.key} vs ${name}: throughput ratios ${r.throughputRatios.map((x) => x.toFixed(2)).join(' ')}; ` +
      `CPU/op ratios ${r.cpuRatios.map((x) => x.toFixed(2)).join(' ')}`;
    return [
      line(baselineName, result),
      ...(result.reference && referenceName ? [line(referenceName, result.reference)] : []),
    ];
  });
  const flows = reports.some((r) => r.scenario.key === 'login' || r.scenario.key === 'refresh');
  const c =
    flows && !postgres
      ? '\n(c) bare oidc-provider on PostgreSQL: not run (needs --pg); login and refresh are against (b), in memory.'
      : '';
  return `${table([header, ...rows])}${c}\n\nper pair (service/baseline):\n${pairLines.join('\n')}`;
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
  /** Second start on the initialised PostgreSQL database: spawn to the first 200 of /health/ready. */
  startMs?: number;
}

// Keycloak's published sizing: password logins and refresh grants per second per vCPU.
const KEYCLOAK = { loginsPerCore: 15, refreshesPerCore: 120 };

const THROUGHPUT_FLOOR = 0.9;
const FLOW_CPU_CEILING = 1.15;
const LIMITS = {
  peakRssMb: 300,
  idleRssMb: 150,
  startMs: 1000,
  bearerStatements: 0,
  refreshStatements: 3,
  loginStatements: 16,
};

type AddRow = (
  what: string,
  value: number,
  shown: string,
  goal: string,
  pass: (v: number) => boolean,
) => void;

/** Throughput and CPU per operation against a baseline, each as the median of the pairs' ratios. */
function ratioRows(add: AddRow, what: string, r: ScenarioReport | undefined, vs: string, cpuCeiling: number) {
  const usable = r && r.baselineName === vs;
  const throughput = usable ? median(r.result.throughputRatios) : Number.NaN;
  const cpuRatio = usable ? median(r.result.cpuRatios) : Number.NaN;
  add(
    `${what}: throughput vs ${vs}`,
    throughput,
    `${num(throughput, 2)}x`,
    `≥ ${THROUGHPUT_FLOOR.toFixed(2)}x`,
    (v) => v >= THROUGHPUT_FLOOR,
  );
  const cpuShown = usable
    ? `${num(cpuRatio, 2)}x (${ms(r.result.service.cpuMsPerOp)} / ${ms(r.result.baseline.cpuMsPerOp)} ms)`
    : '';
  add(`${what}: CPU/op vs ${vs}`, cpuRatio, cpuShown, `≤ ${cpuCeiling.toFixed(2)}x`, (v) => v <= cpuCeiling);
}

/** Statements per operation at the wire, BEGIN/COMMIT included (NaN if not counted). */
const statements = (r: ScenarioReport | undefined) => (r ? r.result.service.statementsPerOp : Number.NaN);

/**
 * The targets, each with the figure this run measured and whether it meets it. The targets are
 * PostgreSQL's: on the embedded database a figure is shown but not judged. A target needing a
 * scenario that did not run, or baseline (c) (PostgreSQL only), is "not measured".
 */
export function formatTargets(reports: ScenarioReport[], x: BenchExtras): string {
  const by = (key: string) => reports.find((r) => r.scenario.key === key);
  const rows: string[][] = [['target', 'measured', 'goal', 'result']];
  const add: AddRow = (what, value, shown, goal, pass) =>
    rows.push([
      what,
      Number.isFinite(value) ? shown : x.postgres ? 'not measured' : 'not measured (needs --pg)',
      goal,
      !Number.isFinite(value) ? '—' : !x.postgres ? '— (judged on --pg)' : pass(value) ? 'PASS' : 'FAIL',
    ]);
  ratioRows(add, 'bearer current-api-session', by('bearer'), '(a)', 1);
  ratioRows(add, 'bearer current-identity', by('current-identity'), '(a)', 1);
  ratioRows(add, 'legacy svc-session', by('legacy'), '(a)', 1);
  ratioRows(add, 'full login (PostgreSQL CPU included)', by('login'), '(c)', FLOW_CPU_CEILING);
  ratioRows(add, 'refresh grant (PostgreSQL CPU included)', by('refresh'), '(c)', FLOW_CPU_CEILING);
  const mb = (v: number | undefined) => `${num(v ?? NaN)} MB`;
  const peak = x.loginPeakRssMb ?? NaN;
  add(
    'RSS peak through the login load',
    peak,
    mb(peak),
    `≤ ${LIMITS.peakRssMb} MB`,
    (v) => v <= LIMITS.peakRssMb,
  );
  const idle = x.idleRssMb ?? NaN;
  add('RSS idle after seeding', idle, mb(idle), `≤ ${LIMITS.idleRssMb} MB`, (v) => v <= LIMITS.idleRssMb);
  const start = x.startMs ?? NaN;
  add(
    'start to ready (second start on PostgreSQL)',
    start,
    `${num(start)} ms`,
    `≤ ${LIMITS.startMs} ms`,
    (v) => v <= LIMITS.startMs,
  );
  const tokenKeys = ['bearer', 'current-identity', 'legacy'].filter((k) => by(k));
  const bearerSql = tokenKeys.length ? Math.max(...tokenKeys.map((k) => statements(by(k)))) : Number.NaN;
  add(
    'SQL statements per bearer request (most of the three)',
    bearerSql,
    num(bearerSql, 2),
    `${LIMITS.bearerStatements}`,
    (v) => v <= LIMITS.bearerStatements,
  );
  const refreshSql = statements(by('refresh'));
  add(
    'SQL statements per refresh grant (BEGIN/COMMIT included)',
    refreshSql,
    num(refreshSql, 2),
    `≤ ${LIMITS.refreshStatements}`,
    (v) => v <= LIMITS.refreshStatements,
  );
  const loginSql = statements(by('login'));
  add(
    'SQL statements per login (BEGIN/COMMIT included)',
    loginSql,
    num(loginSql, 2),
    `≤ ${LIMITS.loginStatements}`,
    (v) => v <= LIMITS.loginStatements,
  );
  const l = by('login')?.result;
  const loginsPerCore = l ? 1000 / l.service.cpuMsPerOp : Number.NaN;
  add(
    'logins/s per core (1 s / CPU per login)',
    loginsPerCore,
    num(loginsPerCore, 1),
    `> ${2 * KEYCLOAK.loginsPerCore} (2x Keycloak's ${KEYCLOAK.loginsPerCore})`,
    (v) => v > 2 * KEYCLOAK.loginsPerCore,
  );
  const r = by('refresh')?.result.service;
  const refreshesPerCore = r ? 1000 / r.cpuMsPerOp : Number.NaN;
  add(
    'refreshes/s per core',
    refreshesPerCore,
    num(refreshesPerCore, 0),
    `> ${2 * KEYCLOAK.refreshesPerCore} (2x Keycloak's ${KEYCLOAK.refreshesPerCore})`,
    (v) => v > 2 * KEYCLOAK.refreshesPerCore,
  );

  return [
    table(rows),
    '',
    'per scenario:',
    ...reports.map(scenarioLine),
    ...argon2Line(by('login'), x.argon2CpuMs),
    "  (statements counted at the wire between each target and PostgreSQL; the service's timers (revocation catch-up, key watcher, janitors) left out)",
    '  not measured here: identity list at 1,000,000 identities (npm run bench -- --scale).',
  ].join('\n');
}

function scenarioLine({ scenario, baselineName, result }: ScenarioReport): string {
  const count = (s: SideSummary) =>
    Number.isFinite(s.statementsPerOp)
      ? `${num(s.statementsPerOp, 2)} SQL statements/op (${num(s.transactionControlPerOp, 2)} of them BEGIN/COMMIT)`
      : undefined;
  const service = count(result.service) ?? 'SQL statements not counted (embedded database)';
  const baseline = count(result.baseline);
  return `  ${scenario.key}: service p99 ${ms(result.service.p99Ms)} ms, ${service}${baseline ? `; ${baselineName} ${baseline}` : ''}`;
}

/** The login's CPU beyond its one Argon2id verify, which every side pays alike. */
function argon2Line(login: ScenarioReport | undefined, argon2Ms: number | undefined): string[] {
  if (!login || argon2Ms === undefined) return [];
  const { result, baselineName, referenceName } = login;
  const beyond = (s: SideSummary) => ms(s.cpuMsPerOp - argon2Ms);
  const ref =
    result.reference && referenceName ? `, ${referenceName} ${beyond(result.reference.summary)}` : '';
  return [
    `  login CPU beyond Argon2id (${ms(argon2Ms)} ms): service ${beyond(result.service)}, ${baselineName} ${beyond(result.baseline)}${ref} ms`,
  ];
}
