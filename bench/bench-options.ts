export interface BenchOptions {
  quick: boolean;
  /**
   * A check that the bench still runs end to end (the test suite's smoke test): one pair of very
   * short runs, the service from source (no build: other tests read dist/). Its figures mean nothing.
   */
  smoke: boolean;
  postgres: boolean;
  /** Scale mode: latencies at 1,000 and at 1,000,000 identities (and audit events) instead of the pairs. */
  scale: boolean;
  pairs: number;
  only: Set<string>;
  logLevel: string;
  /** Write a V8 CPU profile of every target (service and baselines) into this directory. */
  cpuProfDir?: string;
}

export const USAGE = `npm run bench -- [options]

  --quick            short runs (about a minute in all); same pairs, same table
  --smoke            one pair of 0.3 s runs, the service from source: checks that the bench runs
                     (npm test does); its figures mean nothing
  --pg               the service on a fresh PostgreSQL database (postgres://postgres@127.0.0.1:5432,
                     or SVC_BENCH_POSTGRES_URL), created and dropped; login and refresh against
                     baseline (c), the bare provider on a database of its own there, with (b) as
                     reference; the targets judged;
                     default: the embedded database, no (c)
  --scale            seeds 1,000,000 identities (SVC_BENCH_SCALE_ROWS overrides) on PostgreSQL and
                     prints p50 of login, current-identity and the identity list at 1,000 and at
                     that size, side by side; likewise the audit event list (every indexed filter,
                     a follower's poll) at 1,000 and that many events, with PASS/FAIL (implies --pg)
  --pairs N          interleaved pairs per scenario (default 5; fewer cannot tell noise from a difference)
  --only LIST        comma-separated subset of bearer,current-identity,legacy,login,refresh
  --log-level LEVEL  the service's LOG_LEVEL (default warn: no per-request log line)
  --cpu-prof DIR     V8 CPU profiles of the service and the baselines into DIR/service,
                     DIR/baseline-a, DIR/baseline-b, DIR/baseline-c (summarise: npx tsx bench/profile-summary.ts
                     DIR/service); profiling slows the targets: its figures compare with no other run
  --help`;

const SCENARIO_KEYS = ['bearer', 'current-identity', 'legacy', 'login', 'refresh'];

export class UsageError extends Error {}

export function parseBenchOptions(argv: string[]): BenchOptions | 'help' {
  const o: BenchOptions = {
    quick: false,
    smoke: false,
    postgres: false,
    scale: false,
    pairs: 5,
    only: new Set(SCENARIO_KEYS),
    logLevel: 'warn',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    if (arg === '--help' || arg === '-h') return 'help';
    else if (arg === '--quick') o.quick = true;
    else if (arg === '--smoke') {
      o.smoke = o.quick = true;
      o.pairs = 1;
    } else if (arg === '--pg') o.postgres = true;
    else if (arg === '--scale') o.scale = o.postgres = true;
    else if (arg === '--pairs') {
      o.pairs = Number(value());
      if (!Number.isInteger(o.pairs) || o.pairs < 1 || o.pairs > 50) throw new UsageError('--pairs: 1 to 50');
    } else if (arg === '--only') {
      o.only = new Set(value().split(','));
      const unknown = [...o.only].filter((k) => !SCENARIO_KEYS.includes(k));
      if (unknown.length > 0 || o.only.size === 0) throw new UsageError(`--only: ${SCENARIO_KEYS.join(',')}`);
    } else if (arg === '--log-level') o.logLevel = value();
    else if (arg === '--cpu-prof') o.cpuProfDir = value();
    else throw new UsageError(`unknown option ${arg}`);
  }
  return o;
}
