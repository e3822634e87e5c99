import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/**
 * The expand/contract rule for migrations (docs/adr/0016-expand-contract-migrations.md): during a
 * rolling upgrade instances of the previous release run on the migrated database, so a migration
 * may add but not take away or change what they read and write, unless it raises the compatibility
 * level (`raiseCompatibilityLevel` with a reason), which makes them refuse to start instead.
 *
 * A textual check of each migration's source outside its `down` (which only runs when going back
 * deliberately): it knows the knex builder calls and SQL phrases below, not every way to write
 * them; review catches the rest.
 */

/** Migrations written before the rule; they are not checked. Never extended. */
export const BASELINE: readonly string[] = [
  '001_foundation',
  '002_mfa',
  '003_oidc',
  '004_account_index_and_login_shadow',
  '005_ca_identity_name_format',
  '006_hashed_oidc_payload_ids',
  '007_sealed_enrollment_tokens',
  '008_login_failures_per_address',
  '009_identity_list_indexes',
  '010_rate_limits',
  '011_instance_locks',
  '012_certificate_identity',
  '013_signer_token_lifetime',
  '014_mfa_enrollment_owner',
  '015_api_session_origin',
  '016_identity_permissions',
  '017_policy_session_limit',
  '018_policy_bind_tokens',
  '019_device_flow',
  '020_passkeys',
  '021_account_sessions',
  '022_audit_events',
  '023_webhooks',
  '024_webhook_delivery_due_index',
];

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
  { pattern: /\.alter\s*\(/, name: '.alter()', breaks: "changes a column's type or constraints under them" },
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
    pattern: /\bSET\s+NOT\s+NULL\b/i,
    name: 'SET NOT NULL',
    breaks: 'makes a column NOT NULL that their inserts may leave empty',
  },
];

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

/** Splits `text` at the commas, semicolons and `end` outside brackets, from `from`. */
function clauseEnd(text: string, from: number): number {
  let depth = 0;
  for (let k = from; k < text.length; k++) {
    const c = text[k]!;
    if (c === '(') depth++;
    else if (c === ')') {
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

/** `.notNullable()` without `.defaultTo(` in a statement of an `alterTable`/`table` callback. */
function addsNotNullableWithoutDefault(code: string): boolean {
  for (const [from, to] of callSpans(code, /\.(?:alterTable|table)/)) {
    const statements = code.slice(from + 1, to - 1).split(';');
    if (statements.some((s) => /\.notNullable\s*\(/.test(s) && !/\.defaultTo\s*\(/.test(s))) return true;
  }
  return false;
}

/** Whether `code` calls `raiseCompatibilityLevel` with a `reason` that is a non-empty text. */
function raisesLevelWithReason(scanned: Scanned): boolean {
  for (const [from, to] of callSpans(scanned.code, /\braiseCompatibilityLevel/)) {
    const key = /\breason\s*:/g;
    key.lastIndex = from;
    const found = key.exec(scanned.code);
    if (!found || found.index >= to) continue;
    const valueFrom = found.index + found[0].length;
    const valueTo = Math.min(to - 1, clauseEnd(scanned.code, valueFrom));
    const text = scanned.strings
      .filter((s) => s.at >= valueFrom && s.at < valueTo)
      .map((s) => s.text)
      .join('');
    if (text.trim().length > 0) return true;
  }
  return false;
}

/** What a migration's source does that breaks the previous release, if it does not raise the level. */
export function findBreakingConstructs(source: string): Construct[] {
  const scanned = scan(source);
  const down = downSpan(scanned.code);
  const inUp = (at: number) => !down || at < down[0] || at >= down[1];
  const code = down
    ? scanned.code.slice(0, down[0]) + ' '.repeat(down[1] - down[0]) + scanned.code.slice(down[1])
    : scanned.code;
  const upScanned: Scanned = { code, strings: scanned.strings.filter((s) => inUp(s.at)) };
  if (raisesLevelWithReason(upScanned)) return [];
  const sql = upScanned.strings.map((s) => s.text).join(' ');
  const found: Construct[] = [
    ...BUILDER_CALLS.filter((c) => c.pattern.test(code)),
    ...SQL_PHRASES.filter((c) => c.pattern.test(sql)),
  ];
  if (addsNotNullableWithoutDefault(code) || addsNotNullWithoutDefault(sql))
    found.push(NOT_NULL_WITHOUT_DEFAULT);
  return found.map(({ name, breaks }) => ({ name, breaks }));
}

/** One message per breaking construct of migration `name`, saying what to do instead. */
export function checkMigration(name: string, source: string): string[] {
  return findBreakingConstructs(source).map(
    ({ name: construct, breaks }) =>
      `migration ${name} uses ${construct}: it ${breaks} while instances of the previous release ` +
      'still run during a rolling upgrade. Spread the change over two releases (expand: add the new, ' +
      'write both, read the new with a fallback; contract in the next release), or raise the ' +
      'compatibility level in this migration: raiseCompatibilityLevel(knex, { level, reason }) with ' +
      `level the expand migration if this is its contract step, else '${name}', and the reason older ` +
      'code cannot run on it; say so in the CHANGELOG (docs/adr/0016-expand-contract-migrations.md).',
  );
}

/** The findings for every migration in `dir` that is not in the baseline. */
export function checkMigrations(dir: string): string[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_.*\.ts$/.test(file))
    .sort()
    .map((file) => ({ file, name: basename(file, '.ts') }))
    .filter(({ name }) => !BASELINE.includes(name))
    .flatMap(({ file, name }) => checkMigration(name, readFileSync(join(dir, file), 'utf8')));
}
