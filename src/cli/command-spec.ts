import type { ParseArgsConfig } from 'node:util';
import type { CliIo } from './cli-io.js';

export type OptionsConfig = NonNullable<ParseArgsConfig['options']>;
export type OptionValues = Record<string, string | boolean | undefined>;

/** What a command receives once its command line has been parsed. */
export interface CommandContext {
  io: CliIo;
  values: OptionValues;
  positionals: string[];
  /** Global `--json`: machine-readable output on stdout. */
  json: boolean;
}

/** One `svc …` command: its words, its options, its help, and what it does. */
export interface CommandSpec {
  words: string[];
  /** Arguments after the words, as shown in the usage line, e.g. `<url>`. */
  args: string;
  summary: string;
  options: OptionsConfig;
  /** `[flag, explanation]` lines of the help text. */
  optionHelp: [string, string][];
  positionals: { min: number; max: number };
  /** The literal values of the first argument, offered by shell completion. */
  choices?: string[];
  run(ctx: CommandContext): Promise<void>;
}

export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}
