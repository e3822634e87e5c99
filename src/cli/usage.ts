import type { CommandSpec } from './command-spec.js';

const GLOBAL_HELP: [string, string][] = [
  ['--json', 'machine-readable output'],
  ['-h, --help', 'show this help'],
];

/** `text` broken at spaces into lines of at most `width` characters (a longer word stays whole). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/** Wider left entries would leave under 20 characters of an 80-column terminal to the right one. */
const MAX_LEFT = 56;

/**
 * Two columns; on a terminal too narrow for a line, the right one wraps under itself. A left entry
 * longer than MAX_LEFT stands on a line of its own, its explanation under it.
 */
function columns(rows: [string, string][], total?: number): string {
  const width = Math.max(0, ...rows.map(([left]) => left.length).filter((n) => n <= MAX_LEFT));
  const indent = width + 4;
  // Below 20 characters of room a wrapped column reads worse than a long line.
  const room = total === undefined || total - indent < 20 ? undefined : total - indent;
  return rows
    .map(([left, right]) => {
      const [first, ...rest] = room === undefined ? [right] : wrap(right, room);
      const under = rest.map((r) => ' '.repeat(indent) + r);
      if (left.length > width) return [`  ${left}`, ' '.repeat(indent) + first, ...under].join('\n');
      return [`  ${left.padEnd(width)}  ${first}`, ...under].join('\n');
    })
    .join('\n');
}

const synopsis = (c: CommandSpec) => `svc ${c.words.join(' ')} ${c.args}`.trimEnd();

/** `width`: the terminal's, to wrap long explanations; undefined leaves lines whole. */
export function commandHelp(command: CommandSpec, width?: number): string {
  return (
    `Usage: ${synopsis(command)} [options]\n\n` +
    `${command.summary}\n\n` +
    `Options:\n${columns([...command.optionHelp, ...GLOBAL_HELP], width)}\n`
  );
}

export function groupHelp(words: string[], group: CommandSpec[], width?: number): string {
  const prefix = ['svc', ...words].join(' ');
  return (
    `Usage: ${prefix} <command> [options]\n\n` +
    `Commands:\n${columns(
      group.map((c) => [synopsis(c), c.summary]),
      width,
    )}\n\n` +
    `Run "svc <command> --help" for the options of a command.\n`
  );
}
