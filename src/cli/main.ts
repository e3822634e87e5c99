import { parseArgs } from 'node:util';
import { CliError, UsageError } from './cli-error.js';
import { outputWidth, processIo, type CliIo } from './cli-io.js';
import type { CommandSpec, OptionValues, OptionsConfig } from './command-spec.js';
import { apiSessionListCommands } from './api-session-list-commands.js';
import { apiSessionEndingCommands } from './api-session-ending-commands.js';
import { auditEventCommands } from './audit-event-commands.js';
import { blockedCertificateCommands } from './blocked-certificate-commands.js';
import { completionCommand } from './completion-command.js';
import { controllerCommands } from './controller-commands.js';
import { enrollCommand } from './enroll-command.js';
import { enrollmentCommands } from './enrollment-commands.js';
import { identityCommands } from './identity-commands.js';
import { importCommands } from './import-command.js';
import { keysCommands } from './keys-commands.js';
import { loginCommand } from './login-command.js';
import { terminalText } from './terminal-text.js';
import { versionCommand } from './version-command.js';
import { webhookCommands } from './webhook-commands.js';
import { commandHelp, groupHelp } from './usage.js';

/** Every command (docs/cli.md), in the order the help lists them. */
export const commands: CommandSpec[] = [
  loginCommand,
  ...identityCommands,
  ...apiSessionListCommands,
  ...apiSessionEndingCommands,
  ...auditEventCommands,
  ...enrollmentCommands,
  ...blockedCertificateCommands,
  ...webhookCommands,
  ...importCommands,
  enrollCommand,
  ...keysCommands,
  ...controllerCommands,
  versionCommand,
  completionCommand(() => commands),
];

const GLOBAL_OPTIONS: OptionsConfig = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};
const GLOBAL_FLAGS = new Set(['--json', '-h', '--help']);

const startsWith = (words: string[], prefix: string[]) => prefix.every((w, i) => words[i] === w);

/** Leading words that name a command (or a group of them); global flags may sit among them. */
function splitCommandWords(argv: string[]): { words: string[]; rest: string[] } {
  const words: string[] = [];
  const rest: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const token = argv[i]!;
    if (GLOBAL_FLAGS.has(token)) {
      rest.push(token);
      continue;
    }
    if (token.startsWith('-') || commands.some((c) => c.words.join(' ') === words.join(' '))) break;
    if (!commands.some((c) => startsWith(c.words, [...words, token]))) break;
    words.push(token);
  }
  return { words, rest: [...rest, ...argv.slice(i)] };
}

/** Node's parseArgs messages are long; the first sentence is the useful part. */
function usageMessage(err: Error, command: CommandSpec): string {
  const first = err.message.split(/\. /)[0]!.replace(/\.$/, '');
  return `${first}: run svc ${command.words.join(' ')} --help`;
}

async function runCommand(command: CommandSpec, args: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { ...GLOBAL_OPTIONS, ...command.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(usageMessage(err as Error, command));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(commandHelp(command, outputWidth(io)));
    return 0;
  }
  const { min, max } = command.positionals;
  if (positionals.length < min || positionals.length > max) {
    throw new UsageError(`usage: svc ${command.words.join(' ')} ${command.args}`.trimEnd());
  }
  // No option is declared `multiple`, so every value is a string or a boolean.
  await command.run({ io, values: values as OptionValues, positionals, json: values.json === true });
  return 0;
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const { words, rest } = splitCommandWords(argv);
  // `svc --version`, as most command lines spell it, is the `version` command.
  if (words.length === 0 && rest.includes('--version')) {
    return runCommand(
      versionCommand,
      rest.filter((t) => t !== '--version'),
      io,
    );
  }
  const command = commands.find((c) => c.words.join(' ') === words.join(' '));
  if (command) return runCommand(command, rest, io);
  const group = commands.filter((c) => startsWith(c.words, words));
  const wantsHelp = rest.includes('-h') || rest.includes('--help');
  const next = rest.find((t) => !GLOBAL_FLAGS.has(t));
  if (next !== undefined) {
    throw new UsageError(
      `unknown command "${[...words, next].join(' ')}": run svc ${[...words, ''].join(' ')}--help`,
    );
  }
  const help = groupHelp(words, group, outputWidth(io));
  if (wantsHelp) {
    io.stdout.write(help);
    return 0;
  }
  io.stderr.write(help);
  return 2;
}

/** The `svc` command line (bin/svc.js): returns the exit code; failures print one line to stderr. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (err) {
    const failure =
      err instanceof CliError ? err : new CliError(err instanceof Error ? err.message : String(err));
    // Messages quote files and server answers: escaped, so they cannot drive the terminal.
    io.stderr.write(`svc: ${terminalText(failure.message.replace(/\s*\n\s*/g, ' '))}\n`);
    return failure.exitCode;
  }
}
