import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/**
 * The expand/contract rule for migrations (docs/adr/0016-expand-contract-migrations.md): during a
 * rolling upgrade instances of the previous release run on the migrated database, so a migration
 * may add but not take away or change what they read and write, unless it raises the compatibility
 * level, which makes them refuse to start instead. A raise counts only if it can refuse someone:
 * its level is a migration in the folder, above the levels earlier migrations raise to (else it
 * refuses nobody new) and at most the migration itself, with a reason and the release it ships in,
 * all written as literals in the call so that this check can read them.
 *
 * A textual check of each migration's source outside its `down` (which only runs when going back
 * deliberately): it knows the knex builder calls and SQL phrases below, not every way to write
 * them; review catches the rest.
 */

/**
 * The last migration written before the rule: it and every migration whose name sorts before it
 * (compared as knex sorts them) are not checked.
 */
export const BASELINE_END = '024_webhook_delivery_due_index';

/** Whether migration `name` predates the rule. */
export const inBaseline = (name: string): boolean => name <= BASELINE_END;

interface Construct {
  /** How the finding names it. */
  name: string;
  /** What it does to instances of the previous release. */
  breaks: string;
}

/** knex schema-builder calls, found in the code (not in strings or comments). */
const BUILDER_CALLS: (Construct & { pattern: RegExp })[] = [
  { pattern: /\.dropColumns?\s*\(/, name: 'dropColumn', breaks: 'drops a column they read or write' },
  { pattern: /\.renameColumn\s*\(/, name: 'renameColumn', breaks: 'renames a column they read or write' },
  { pattern: /\.dropTable(IfExists)?\s*\(/, name: 'dropTable', breaks: 'drops a table they use' },
  { pattern: /\.renameTable\s*\(/, name: 'renameTable', breaks: 'renames a table they use' },
  {
    pattern: /\.alter\s*\(/,
    name: '.alter()',
    breaks: "changes a column's type, nullability or default under them",
  },
  {
    pattern: /\.dropNullable\s*\(/,
    name: 'dropNullable',
    breaks: 'makes a column NOT NULL that their inserts may leave empty',
  },
];

/** SQL phrases, found in the migration's string literals. */
const SQL_PHRASES: (Construct & { pattern: RegExp })[] = [
  { pattern: /\bDROP\s+COLUMN\b/i, name: 'DROP COLUMN', breaks: 'drops a column they read or write' },
  { pattern: /\bDROP\s+TABLE\b/i, name: 'DROP TABLE', breaks: 'drops a table they use' },
  { pattern: /\bRENAME\b/i, name: 'RENAME', breaks: 'renames what they use' },
  {
    pattern: /\bALTER\s+(?:COLUMN\s+)?"?[\w$]+"?\s+TYPE\b/i,
    name: 'ALTER COLUMN … TYPE',
    breaks: "changes a column's type under them",
  },
  { pattern: /\bSET\s+DATA\s+TYPE\b/i, name: 'SET DATA TYPE', breaks: "changes a column's type under them" },
  {
    pattern: /\bDROP\s+DEFAULT\b|\bSET\s+DEFAULT\s+NULL\b/i,
    name: 'DROP DEFAULT',
    breaks: 'removes a default that their inserts may rely on to fill a NOT NULL column',
  },
  {
    pattern: /\bSET\s+NOT\s+NULL\b/i,
    name: 'SET NOT NULL',
    breaks: 'makes a column NOT NULL that their inserts may leave empty',
  },
];

const DEFAULT_REMOVED: Construct = {
  name: '.defaultTo(null)',
  breaks: 'removes a default that their inserts may rely on to fill a NOT NULL column',
};

const NOT_NULL_WITHOUT_DEFAULT: Construct = {
  name: 'NOT NULL without a default on an existing table',
  breaks: 'adds a column their inserts leave empty',
};

/**
 * The source as its scanner sees it: `code` has the same length, with comments and the contents of
 * string literals blanked (so that brackets can be matched and calls found), and `strings` holds
 * each literal's contents (a template literal's text between its `${…}`) with where it starts.
 */
interface Scanned {
  code: string;
  strings: { at: number; text: string }[];
}

function scan(source: string): Scanned {
  const code = source.split('');
  const strings: Scanned['strings'] = [];
  /** Open `${` of template literals: the brace depth inside each expression. */
  const templates: number[] = [];
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (code[k] !== '\n') code[k] = ' ';
  };
  /** Reads string contents from `start` up to the closing `quote` (or a template's `${`). */
  const readString = (start: number, quote: string): { end: number; opensExpression: boolean } => {
    let k = start;
    while (k < source.length) {
      const c = source[k]!;
      if (c === '\\') k += 2;
      else if (c === quote) break;
      else if (quote === '`' && c === '$' && source[k + 1] === '{') break;
      else k++;
    }
    strings.push({ at: start, text: source.slice(start, k) });
    blank(start, k);
    const opensExpression = quote === '`' && source[k] === '$';
    return { end: opensExpression ? k + 2 : k + 1, opensExpression };
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      const read = readString(i + 1, c);
      if (read.opensExpression) templates.push(0);
      i = read.end;
    } else if (c === '{' && templates.length > 0) {
      templates[templates.length - 1]!++;
      i++;
    } else if (c === '}' && templates.length > 0 && templates[templates.length - 1] === 0) {
      // The end of a `${…}`: the template literal's text goes on.
      templates.pop();
      const read = readString(i + 1, '`');
      if (read.opensExpression) templates.push(0);
      i = read.end;
    } else {
      if (c === '}' && templates.length > 0) templates[templates.length - 1]!--;
      i++;
    }
  }
  return { code: code.join(''), strings };
}

/** The index just past the bracket that closes the one at `open` (in blanked code). */
function closing(code: string, open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']' };
  const stack: string[] = [];
  for (let k = open; k < code.length; k++) {
    const c = code[k]!;
    if (pairs[c]) stack.push(pairs[c]);
    else if (c === stack[stack.length - 1]) {
      stack.pop();
      if (stack.length === 0) return k + 1;
    }
  }
  return code.length;
}

/** The span of the `down` function (declaration or arrow), if there is one. */
function downSpan(code: string): [number, number] | undefined {
  const found = /\bexport\s+(?:async\s+function\s+|function\s+|const\s+)down\b/.exec(code);
  if (!found) return undefined;
  const params = code.indexOf('(', found.index);
  if (params === -1) return undefined;
  const body = code.indexOf('{', closing(code, params));
  if (body === -1) return undefined;
  return [found.index, closing(code, body)];
}

/** The argument list of each call of `callee` in `code`, as spans. */
function callSpans(code: string, callee: RegExp): [number, number][] {
  const spans: [number, number][] = [];
  const pattern = new RegExp(callee.source + /\s*\(/.source, 'g');
  for (let m = pattern.exec(code); m; m = pattern.exec(code)) {
    const open = m.index + m[0].length - 1;
    spans.push([open, closing(code, open)]);
  }
  return spans;
}

/** Where the clause at `from` ends: at a comma or semicolon outside brackets, or an unmatched closing one. */
function clauseEnd(text: string, from: number): number {
  let depth = 0;
  for (let k = from; k < text.length; k++) {
    const c = text[k]!;
    if (c === '(' || c === '{' || c === '[') depth++;
    else if (c === ')' || c === '}' || c === ']') {
      if (depth === 0) return k;
      depth--;
    } else if ((c === ',' || c === ';') && depth === 0) return k;
  }
  return text.length;
}

/** `ADD [COLUMN] … NOT NULL` without `DEFAULT` (or a generated value) in SQL. */
function addsNotNullWithoutDefault(sql: string): boolean {
  const add = /\bADD\s+(?!CONSTRAINT\b|PRIMARY\b|UNIQUE\b|FOREIGN\b|CHECK\b|EXCLUDE\b|VALUE\b)/gi;
  for (let m = add.exec(sql); m; m = add.exec(sql)) {
    const clause = sql.slice(m.index, clauseEnd(sql, m.index + m[0].length));
    if (/\bNOT\s+NULL\b/i.test(clause) && !/\b(DEFAULT|GENERATED)\b/i.test(clause)) return true;
  }
  return false;
}

/** The statements of each `alterTable`/`table` callback: where existing columns change. */
function alterStatements(code: string): string[] {
  return callSpans(code, /\.(?:alterTable|table)/).flatMap(([from, to]) =>
    code.slice(from + 1, to - 1).split(';'),
  );
}

const REMOVED_DEFAULT = /\.defaultTo\s*\(\s*(?:null|undefined)\s*\)/;

/** `.notNullable()` without `.defaultTo(` in a statement of an `alterTable`/`table` callback. */
function addsNotNullableWithoutDefault(code: string): boolean {
  return alterStatements(code).some(
    (s) => /\.notNullable\s*\(/.test(s) && (!/\.defaultTo\s*\(/.test(s) || REMOVED_DEFAULT.test(s)),
  );
}

/** `.defaultTo(null)` (or `undefined`) in an `alterTable`/`table` callback: with `.alter()`, a removal. */
function removesDefault(code: string): boolean {
  return alterStatements(code).some((s) => REMOVED_DEFAULT.test(s));
}

/** A `raiseCompatibilityLevel` call's arguments, as far as they are written as literals in it. */
interface RaiseCall {
  /** The `level` property, when it is a string literal. */
  level?: string;
  /** The text of the `reason` property's string literals. */
  reason: string;
  /** The `raisedByVersion` property, when it is a string literal. */
  raisedByVersion?: string;
}

/** The span of property `key`'s value in the argument list at `[from, to)`, if it is written there. */
function propertySpan(code: string, key: string, from: number, to: number): [number, number] | undefined {
  const pattern = new RegExp(`\\b${key}\\s*:`, 'g');
  pattern.lastIndex = from;
  const found = pattern.exec(code);
  if (!found || found.index >= to) return undefined;
  const valueFrom = found.index + found[0].length;
  return [valueFrom, Math.min(to - 1, clauseEnd(code, valueFrom))];
}

/** The contents of the one string literal (no `${…}`) that is all of `[from, to)`, if it is. */
function stringLiteral(scanned: Scanned, [from, to]: [number, number]): string | undefined {
  if (!/^\s*(['"`])\s*\1\s*$/.test(scanned.code.slice(from, to))) return undefined;
  return scanned.strings.find((s) => s.at >= from && s.at < to)?.text;
}

/** Every `raiseCompatibilityLevel` call in `scanned`. */
function raiseCalls(scanned: Scanned): RaiseCall[] {
  return callSpans(scanned.code, /\braiseCompatibilityLevel/).map(([from, to]) => {
    const level = propertySpan(scanned.code, 'level', from, to);
    const reason = propertySpan(scanned.code, 'reason', from, to);
    const version = propertySpan(scanned.code, 'raisedByVersion', from, to);
    return {
      level: level && stringLiteral(scanned, level),
      reason: reason
        ? scanned.strings
            .filter((s) => s.at >= reason[0] && s.at < reason[1])
            .map((s) => s.text)
            .join('')
        : '',
      raisedByVersion: version && stringLiteral(scanned, version),
    };
  });
}

/** Semantic versioning 2.0.0, as package.json and the CHANGELOG name releases. */
const SEMVER = /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The migration's source outside `down`, as the scanner sees it. */
function scanUp(source: string): Scanned {
  const scanned = scan(source);
  const down = downSpan(scanned.code);
  if (!down) return scanned;
  return {
    code: scanned.code.slice(0, down[0]) + ' '.repeat(down[1] - down[0]) + scanned.code.slice(down[1]),
    strings: scanned.strings.filter((s) => s.at < down[0] || s.at >= down[1]),
  };
}

/** What a migration is checked against. */
export interface MigrationContext {
  /** The names (without extension) of the migrations in migrations/. */
  migrations: readonly string[];
  /** The highest level that a migration before this one raises to, if any does. */
  raisedBefore?: string;
}

/** What the check finds in one migration. */
export interface MigrationFindings {
  /** What breaks the previous release, unless the migration raises the level correctly. */
  constructs: Construct[];
  /** What is wrong with its `raiseCompatibilityLevel` calls; any of it and the raise does not count. */
  raiseProblems: string[];
}

/** What is wrong with a raise in migration `name`; nothing if it raises the level as it should. */
function raiseProblems(name: string, raise: RaiseCall, context: MigrationContext): string[] {
  const problems: string[] = [];
  const { level } = raise;
  if (level === undefined) problems.push('its level is not written as a string literal in the call');
  else if (!context.migrations.includes(level))
    problems.push(`its level '${level}' is no migration in migrations/`);
  else {
    if (context.raisedBefore !== undefined && level <= context.raisedBefore)
      problems.push(
        `its level '${level}' is not above '${context.raisedBefore}', which an earlier migration ` +
          'raises it to, so it refuses no release that was not refused already',
      );
    if (level > name) problems.push(`its level '${level}' sorts after the migration itself`);
  }
  if (!raise.reason.trim()) problems.push('it has no reason written in the call');
  if (raise.raisedByVersion === undefined || !SEMVER.test(raise.raisedByVersion))
    problems.push(
      'its raisedByVersion is not written as the version (semver string literal) of the release it ships in',
    );
  return problems;
}

/** The breaking constructs of migration `name` and the problems of its raises. */
export function findInMigration(name: string, source: string, context: MigrationContext): MigrationFindings {
  const scanned = scanUp(source);
  const raises = raiseCalls(scanned);
  const problems = raises.flatMap((raise) => raiseProblems(name, raise, context));
  if (raises.length > 0 && problems.length === 0) return { constructs: [], raiseProblems: [] };
  const { code } = scanned;
  const sql = scanned.strings.map((s) => s.text).join(' ');
  const constructs: Construct[] = [
    ...BUILDER_CALLS.filter((c) => c.pattern.test(code)),
    ...SQL_PHRASES.filter((c) => c.pattern.test(sql)),
  ];
  if (removesDefault(code)) constructs.push(DEFAULT_REMOVED);
  if (addsNotNullableWithoutDefault(code) || addsNotNullWithoutDefault(sql))
    constructs.push(NOT_NULL_WITHOUT_DEFAULT);
  return { constructs: constructs.map(({ name, breaks }) => ({ name, breaks })), raiseProblems: problems };
}

/** The levels migration `source` raises to, as written (for the migrations after it). */
export function raisedLevels(source: string): string[] {
  return raiseCalls(scanUp(source)).flatMap((raise) => (raise.level === undefined ? [] : [raise.level]));
}

const ADR = 'docs/adr/0016-expand-contract-migrations.md';

/** The one message for migration `name`, listing all it is refused for; none if it keeps the rule. */
export function checkMigration(name: string, source: string, context: MigrationContext): string[] {
  const { constructs, raiseProblems: problems } = findInMigration(name, source, context);
  if (constructs.length === 0 && problems.length === 0) return [];
  const lines: string[] = [];
  if (constructs.length > 0)
    lines.push(
      `migration ${name} breaks instances of the previous release, which keep running on the ` +
        'migrated database during a rolling upgrade:',
      ...constructs.map(({ name: construct, breaks }) => `  - ${construct}: ${breaks}`),
    );
  if (problems.length > 0)
    lines.push(
      constructs.length > 0
        ? 'Its raiseCompatibilityLevel call does not count:'
        : `migration ${name} raises the compatibility level wrongly:`,
      ...problems.map((problem) => `  - ${problem}`),
    );
  if (constructs.length > 0)
    lines.push(
      `Either spread the change over two releases (expand, then contract in the next one: ${ADR}), or ` +
        'raise the compatibility level in this migration with the reason older releases cannot run on it: ' +
        `raiseCompatibilityLevel(knex, { level, reason, raisedByVersion }), level being the expand ` +
        `migration for a contract step, else '${name}'; and say in the CHANGELOG which releases it refuses.`,
    );
  else
    lines.push(
      'The level names a migration in migrations/, above any an earlier migration raises to and at most ' +
        `this one; raisedByVersion is the release this migration ships in (${ADR}).`,
    );
  return [lines.join('\n')];
}

/** The messages for the migrations in `dir` after the baseline, checked in the order knex runs them. */
export function checkMigrations(dir: string): string[] {
  const files = readdirSync(dir)
    .filter((file) => /^\d{3}_.*\.ts$/.test(file))
    .sort();
  const migrations = files.map((file) => basename(file, '.ts'));
  let raisedBefore: string | undefined;
  const messages: string[] = [];
  for (const [k, file] of files.entries()) {
    const name = migrations[k]!;
    const source = readFileSync(join(dir, file), 'utf8');
    if (!inBaseline(name)) messages.push(...checkMigration(name, source, { migrations, raisedBefore }));
    for (const level of raisedLevels(source))
      if (raisedBefore === undefined || level > raisedBefore) raisedBefore = level;
  }
  return messages;
}
