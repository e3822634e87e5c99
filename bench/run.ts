import { availableParallelism, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { selfSignedLoopbackCert, type TlsMaterial } from './baselines/baseline-tls.js';
import { parseBenchOptions, USAGE, UsageError, type BenchOptions } from './bench-options.js';
import { runInterleavedPairs } from './interleaved-pairs.js';
import { formatScale, largeRows, runScale } from './scale-run.js';
import { formatReport, formatTargets, type BenchExtras, type ScenarioReport } from './report.js';
import {
  bearerSide,
  CURRENT_IDENTITY_PATH,
  legacySessionTokens,
  legacySide,
  loginSide,
  loginTokens,
  refreshSide,
  SCENARIOS,
  type PreparedSide,
  type Scenario,
} from './scenarios.js';
import {
  startBearerBaseline,
  startOidcBaseline,
  startPostgresOidcBaseline,
  type PostgresOidcBaseline,
} from './targets/baseline-targets.js';
import { startController, type ControllerTarget } from './targets/controller-target.js';
import { argon2CpuMs } from './argon2-cpu.js';
import { benchUsers, type Target } from './targets/target.js';
import { median } from './stats.js';

/**
 * `npm run bench`: the service against its baselines, each target in its own process, the load
 * from this one. It reports; it does not judge: the exit code is non-zero only when something
 * failed (a target did not start, a request did not succeed).
 */

const USERS = benchUsers(8);
const WARMUP_MS = { full: 3000, quick: 1000, smoke: 100 };
const SMOKE_RUN_MS = 300;
/** Second starts timed on PostgreSQL (one with --quick and --smoke); the median is reported. */
const START_SAMPLES = 3;
const progress = (line: string) => process.stderr.write(`${line}\n`);

/** Every target started so far, stopped in reverse order at the end, on errors and on Ctrl-C. */
const running: Array<{ stop(): Promise<void> }> = [];
let stopping: Promise<void> | undefined;
/** One stop for all callers: Ctrl-C and the failure it causes must not exit before the cleanup ends. */
function stopAll(): Promise<void> {
  return (stopping ??= (async () => {
    for (let t = running.pop(); t; t = running.pop()) await t.stop().catch(() => undefined);
  })());
}
function started(target: Target): Target {
  running.push(target);
  return target;
}
async function stopped(target: Target): Promise<void> {
  running.splice(running.indexOf(target), 1);
  await target.stop();
}

async function compare(
  o: BenchOptions,
  scenario: Scenario,
  baselineName: string,
  sides: [PreparedSide, PreparedSide],
  reference?: { name: string; side: PreparedSide },
): Promise<ScenarioReport> {
  const runMs = o.smoke ? SMOKE_RUN_MS : o.quick ? scenario.runMs.quick : scenario.runMs.full;
  progress(`${scenario.title}: ${o.pairs} pairs of ${runMs / 1000} s runs`);
  try {
    const result = await runInterleavedPairs(
      sides[0],
      sides[1],
      {
        pairs: o.pairs,
        runMs,
        warmupMs: o.smoke ? WARMUP_MS.smoke : o.quick ? WARMUP_MS.quick : WARMUP_MS.full,
        maxOps: Math.ceil((runMs / 1000) * scenario.ceilingPerSecond),
        onRun: progress,
      },
      reference?.side,
    );
    return { scenario, baselineName, ...(reference ? { referenceName: reference.name } : {}), result };
  } finally {
    await Promise.all([...sides, ...(reference ? [reference.side] : [])].map((s) => s.close()));
  }
}

/**
 * Node options that make a target write its CPU profiles into `<dir>/<name>/` when it stops: one
 * file per thread (the main thread's is the largest; tsx's loader thread writes one too).
 */
const profileArgs = (o: BenchOptions, name: string): string[] =>
  o.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', resolve(o.cpuProfDir, name)] : [];

const scenario = (key: Scenario['key']) => SCENARIOS.find((s) => s.key === key)!;

/** The token scenarios (bearer, current-identity, legacy), all against baseline (a). */
async function bearerReports(o: BenchOptions, service: Target, tls: TlsMaterial): Promise<ScenarioReport[]> {
  progress('starting baseline (a): bare Koa + jose');
  const baseline = await startBearerBaseline(tls, profileArgs(o, 'baseline-a'));
  const target = started(baseline.target);
  const serviceTokens = await loginTokens(service, USERS);
  const baselineTokens = await Promise.all(USERS.map((u) => baseline.mintAccessToken(u)));
  const reports: ScenarioReport[] = [];
  if (o.only.has('bearer')) {
    reports.push(
      await compare(o, scenario('bearer'), '(a)', [
        bearerSide(service, serviceTokens),
        bearerSide(target, baselineTokens),
      ]),
    );
  }
  if (o.only.has('current-identity')) {
    reports.push(
      await compare(o, scenario('current-identity'), '(a)', [
        bearerSide(service, serviceTokens, CURRENT_IDENTITY_PATH),
        bearerSide(target, baselineTokens),
      ]),
    );
  }
  if (o.only.has('legacy')) {
    const sessionTokens = await legacySessionTokens(service, USERS);
    reports.push(
      await compare(o, scenario('legacy'), '(a)', [
        legacySide(service, sessionTokens),
        bearerSide(target, baselineTokens),
      ]),
    );
  }
  await stopped(target);
  return reports;
}

/**
 * Login and refresh. On PostgreSQL the pairs are service and baseline (c) (the bare provider on
 * PostgreSQL), with (b) (in memory) run after each pair for reference; on the embedded database
 * (c) does not run and the pairs are service and (b).
 */
async function flowReports(
  o: BenchOptions,
  service: ControllerTarget,
  tls: TlsMaterial,
  extras: BenchExtras,
): Promise<ScenarioReport[]> {
  progress('starting baseline (b): bare oidc-provider, in memory');
  const inMemory = started(await startOidcBaseline(tls, USERS, profileArgs(o, 'baseline-b')));
  let onPostgres: PostgresOidcBaseline | undefined;
  if (o.postgres) {
    progress('starting baseline (c): bare oidc-provider on PostgreSQL');
    onPostgres = await startPostgresOidcBaseline(tls, USERS, profileArgs(o, 'baseline-c'), (stop) =>
      running.push({ stop }),
    );
  }
  const baseline = onPostgres ?? inMemory;
  const baselineName = onPostgres ? '(c)' : '(b)';
  const reference = (side: PreparedSide) => (onPostgres ? { name: '(b)', side } : undefined);
  const reports: ScenarioReport[] = [];
  if (o.only.has('login')) {
    extras.argon2CpuMs = await argon2CpuMs();
    reports.push(
      await compare(
        o,
        scenario('login'),
        baselineName,
        [loginSide(service, USERS), loginSide(baseline, USERS)],
        reference(loginSide(inMemory, USERS)),
      ),
    );
    extras.loginPeakRssMb = (await service.memory()).peakMb;
  }
  if (o.only.has('refresh')) {
    await service.settle();
    await onPostgres?.settle();
    const sides: [PreparedSide, PreparedSide] = [
      await refreshSide(service, USERS),
      await refreshSide(baseline, USERS),
    ];
    const extra = onPostgres ? reference(await refreshSide(inMemory, USERS)) : undefined;
    reports.push(await compare(o, scenario('refresh'), baselineName, sides, extra));
  }
  if (onPostgres) {
    const index = running.findIndex((r) => r.stop === onPostgres.stop);
    if (index >= 0) running.splice(index, 1);
    await onPostgres.stop();
  }
  await stopped(inMemory);
  return reports;
}

/** The service stopped and started again on its initialised database, after the scenarios. */
async function timedStarts(service: ControllerTarget, samples: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    ms.push(await service.restartTimed());
    progress(`  start to ready: ${ms[i]!.toFixed(0)} ms`);
  }
  return median(ms);
}

function methodLines(o: BenchOptions, startLoad: number[]): string {
  const warmup = (o.quick ? WARMUP_MS.quick : WARMUP_MS.full) / 1000;
  const runs = SCENARIOS.filter((s) => o.only.has(s.key))
    .map((s) => `${s.key} ${(o.quick ? s.runMs.quick : s.runMs.full) / 1000} s`)
    .join(', ');
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join('/');
  if (o.smoke) return 'Smoke run (--smoke): one pair of 0.3 s runs per scenario; these figures mean nothing.';
  return [
    `Method: per scenario a ${warmup} s warm-up of each side, then ${o.pairs} interleaved pairs (S B, B S, …; ${runs} per run), closed loop, keep-alive HTTPS.`,
    `Throughput: median of runs. p50/p99: all runs' latencies pooled. CPU/op: utime+stime of the target process from /proc per successful operation, median of runs` +
      (o.postgres
        ? "; the service and baseline (c) add the CPU of their own database's PostgreSQL backends (shared background processes excluded)."
        : '; the service on the embedded database (in its own process).'),
    o.postgres
      ? 'Login and refresh: pairs of the service and (c), the bare provider on PostgreSQL; (b), in memory, runs after each pair for reference (S C B, C S B, …).'
      : 'Login and refresh: pairs of the service and (b); baseline (c), the bare provider on PostgreSQL, not run (needs --pg).',
    `Ratios: median over pairs of service/baseline. Service LOG_LEVEL=${o.logLevel}, rate limits off, ${USERS.length} users. ` +
      `Load generator in this process on the same ${availableParallelism()}-CPU machine; Node ${process.version}; load average ${load(startLoad)} at start, ${load(loadavg())} at end.`,
  ].join('\n');
}

async function main(): Promise<number> {
  let o: BenchOptions | 'help';
  try {
    o = parseBenchOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (o === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const startLoad = loadavg();
  const tls = await selfSignedLoopbackCert();
  progress(`starting the service (${o.postgres ? 'PostgreSQL' : 'embedded database'})`);
  // Registered as running before it starts: Ctrl-C during the start still removes its database.
  const service = await startController(
    {
      postgres: o.postgres,
      logLevel: o.logLevel,
      users: USERS,
      nodeArgs: profileArgs(o, 'service'),
      fromSource: o.smoke,
    },
    (stop) => running.push({ stop }),
  );
  if (o.scale) {
    const large = largeRows();
    const rows = await runScale(service, USERS[0]!, large, progress);
    await stopAll();
    const load = loadavg()
      .map((x) => x.toFixed(1))
      .join('/');
    process.stdout.write(
      `\n${formatScale(rows, large)}\n\nMethod: sequential requests on one keep-alive HTTPS connection, ` +
        `median after a warm-up; the service on PostgreSQL, LOG_LEVEL=${o.logLevel}; ` +
        `Node ${process.version}; load average ${load} at end.\n`,
    );
    return 0;
  }
  const reports: ScenarioReport[] = [];
  // Idle: started, seeded, a moment to settle.
  await new Promise((r) => setTimeout(r, 2000));
  const extras: BenchExtras = { postgres: o.postgres, idleRssMb: (await service.memory()).rssMb };
  if (['bearer', 'current-identity', 'legacy'].some((k) => o.only.has(k))) {
    reports.push(...(await bearerReports(o, service, tls)));
  }
  if (o.only.has('login') || o.only.has('refresh')) {
    reports.push(...(await flowReports(o, service, tls, extras)));
  }
  if (o.postgres) extras.startMs = await timedStarts(service, o.quick ? 1 : START_SAMPLES);
  await stopAll();

  process.stdout.write(
    `\n${formatReport(reports, o.postgres)}\n\nTargets:\n${formatTargets(reports, extras)}\n\n${methodLines(o, startLoad)}\n`,
  );
  const errors = reports.flatMap((r) => r.result.errors.map((e) => `${r.scenario.key}: ${e}`));
  if (errors.length === 0) return 0;
  process.stderr.write(`\nFAILED requests (the figures above are incomplete):\n${errors.join('\n')}\n`);
  return 1;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping the targets`);
    void stopAll().finally(() => process.exit(130));
  });
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    await stopAll();
    process.exit(1);
  },
);
