import type { CommandSpec } from './command-spec.js';

const GLOBAL_HELP: [string, string][] = [
  ['--json', 'machine-readable output'],
  ['-h, --help', 'show this help'],
];

function columns(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join('\n');
}

const synopsis = (c: CommandSpec) => `svc ${c.words.join(' ')} ${c.args}`.trimEnd();

export function commandHelp(command: CommandSpec): string {
  return (
    `Usage: ${synopsis(command)} [options]\n\n` +
    `${command.summary}\n\n` +
    `Options:\n${columns([...command.optionHelp, ...GLOBAL_HELP])}\n`
  );
}

export function groupHelp(words: string[], group: CommandSpec[]): string {
  const prefix = ['svc', ...words].join(' ');
  return (
    `Usage: ${prefix} <command> [options]\n\n` +
    `Commands:\n${columns(group.map((c) => [synopsis(c), c.summary]))}\n\n` +
    `Run "svc <command> --help" for the options of a command.\n`
  );
}
