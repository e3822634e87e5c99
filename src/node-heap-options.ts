/**
 * V8 heap options the controller runs with, on every start path: `npm start` (package.json),
 * the image (the Dockerfile's CMD) and `svc controller run`, which starts the controller again
 * with them when its own process lacks them (V8 sizes its heap when the process starts). They are
 * command-line flags: Node refuses `--heap-growing-percent` in NODE_OPTIONS. Why these values:
 * docs/operations.md, "Memory". A value set by the operator (a flag, or NODE_OPTIONS for the
 * semi-space) wins over ours.
 */
export const CONTROLLER_NODE_OPTIONS: readonly string[] = [
  '--max-semi-space-size=8',
  '--heap-growing-percent=100',
];

const flagName = (option: string) => option.split('=')[0]!;

/** The options of CONTROLLER_NODE_OPTIONS that neither `execArgv` nor `NODE_OPTIONS` sets. */
export function missingNodeOptions(execArgv: readonly string[], nodeOptions = ''): string[] {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].map(flagName);
  // V8 accepts - and _ alike inside a flag name.
  const normal = (name: string) => name.replace(/_/g, '-');
  const set = new Set(given.map(normal));
  return CONTROLLER_NODE_OPTIONS.filter((o) => !set.has(normal(flagName(o))));
}
