import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import ts from 'typescript';

/**
 * The expand/contract rule for migrations (docs/adr/0016-expand-contract-migrations.md): during a
 * rolling upgrade instances of the previous release run on the migrated database, so a migration
 * may add but not take away or change what they read and write, unless it raises the compatibility
 * level, which makes them refuse to start instead. A raise counts only if it can refuse someone:
 * its level is a migration in the folder, above the levels earlier migrations raise to (else it
 * refuses nobody new) and at most the migration itself, with a reason and the release it ships in,
 * all written as literals in the call so that this check can read them, and only if `up` always
 * makes it and it calls the project's function.
 *
 * It reads each migration's syntax tree (TypeScript's parser: comments are no code, escapes in
 * strings are decoded) outside its `down`, which only runs when going back deliberately: it knows
 * the knex builder calls and SQL phrases below, not every way to write them (SQL built at run time
 * is out of its sight); review catches the rest.
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

/** knex builder methods, found by the name they are called or looked up by (`t.alter()`, `t['alter']()`). */
const BUILDER_CALLS: (Construct & { methods: RegExp })[] = [
  { methods: /^dropColumns?$/, name: 'dropColumn', breaks: 'drops a column they read or write' },
  {
    methods: /^dropTimestamps$/,
    name: 'dropTimestamps',
    breaks: 'drops the timestamp columns they read or write',
  },
  { methods: /^renameColumn$/, name: 'renameColumn', breaks: 'renames a column they read or write' },
  { methods: /^dropTable(IfExists)?$/, name: 'dropTable', breaks: 'drops a table they use' },
  { methods: /^renameTable$/, name: 'renameTable', breaks: 'renames a table they use' },
  { methods: /^drop(Materialized)?View(IfExists)?$/, name: 'dropView', breaks: 'drops a view they may read' },
  { methods: /^renameView$/, name: 'renameView', breaks: 'renames a view they may read' },
  { methods: /^dropSchema(IfExists)?$/, name: 'dropSchema', breaks: 'drops the tables in it' },
  {
    methods: /^alter$/,
    name: '.alter()',
    breaks: "changes a column's type, nullability or default under them",
  },
  {
    methods: /^dropNullable$/,
    name: 'dropNullable',
    breaks: 'makes a column NOT NULL that their inserts may leave empty',
  },
  {
    methods: /^dropUnique(IfExists)?$/,
    name: 'dropUnique',
    breaks: 'drops a unique constraint that their ON CONFLICT and lookups rely on',
  },
  {
    methods: /^dropPrimary(IfExists)?$/,
    name: 'dropPrimary',
    breaks: 'drops a primary key that their ON CONFLICT and lookups rely on',
  },
  {
    methods: /^dropForeign(IfExists)?$/,
    name: 'dropForeign',
    breaks: 'drops a foreign key whose ON DELETE CASCADE they rely on to remove dependent rows',
  },
  { methods: /^truncate$/, name: 'truncate', breaks: 'deletes every row of a table they use' },
];

/** An identifier in SQL, or what stands for one: a knex binding (`??`, `?`, `:name:`) or a part built at run time. */
const IDENT = String.raw`(?:"(?:[^"]|"")*"|[\w$]+|\?\??|:\w+:)`;
/** A table's name in SQL, possibly with its schema: the table is its first group. */
const TABLE = String.raw`(${IDENT}(?:\.${IDENT})?)`;

/** SQL phrases, found in the migration's strings. */
const SQL_PHRASES: (Construct & { pattern: RegExp })[] = [
  { pattern: /\bDROP COLUMN\b/i, name: 'DROP COLUMN', breaks: 'drops a column they read or write' },
  { pattern: /\bDROP TABLE\b/i, name: 'DROP TABLE', breaks: 'drops a table they use' },
  { pattern: /\bDROP (?:MATERIALIZED )?VIEW\b/i, name: 'DROP VIEW', breaks: 'drops a view they may read' },
  { pattern: /\bDROP SCHEMA\b/i, name: 'DROP SCHEMA', breaks: 'drops the tables in it' },
  { pattern: /\bRENAME\b/i, name: 'RENAME', breaks: 'renames what they use' },
  {
    pattern: new RegExp(String.raw`\bALTER (?:COLUMN )?${IDENT} TYPE\b`, 'i'),
    name: 'ALTER COLUMN … TYPE',
    breaks: "changes a column's type under them",
  },
  { pattern: /\bSET DATA TYPE\b/i, name: 'SET DATA TYPE', breaks: "changes a column's type under them" },
  {
    pattern: /\bDROP DEFAULT\b|\bSET DEFAULT NULL\b/i,
    name: 'DROP DEFAULT',
    breaks: 'removes a default that their inserts may rely on to fill a NOT NULL column',
  },
  {
    pattern: /\bSET NOT NULL\b/i,
    name: 'SET NOT NULL',
    breaks: 'makes a column NOT NULL that their inserts may leave empty',
  },
  {
    pattern: /\bDROP CONSTRAINT\b/i,
    name: 'DROP CONSTRAINT',
    breaks:
      'drops a constraint: a unique one their ON CONFLICT relies on, or a foreign key whose cascades they rely on',
  },
  {
    pattern: /\bDROP INDEX\b/i,
    name: 'DROP INDEX',
    breaks: "may drop a unique index their ON CONFLICT relies on (drop a plain index with knex's dropIndex)",
  },
  {
    // Not the event of a trigger (`AFTER INSERT OR TRUNCATE ON t`), nor `TG_OP = 'TRUNCATE'` in one.
    pattern: /(?<!\b(?:BEFORE|AFTER|OR) |')\bTRUNCATE\b(?! ON\b)/i,
    name: 'TRUNCATE',
    breaks: 'deletes every row of a table they use',
  },
];

/** `ALTER TABLE name`: which table the clauses after it change. */
const ALTERED_TABLE = new RegExp(String.raw`\bALTER TABLE (?:IF EXISTS )?(?:ONLY )?${TABLE}`, 'gi');
const CREATED_TABLE = new RegExp(
  String.raw`\bCREATE (?:(?:GLOBAL |LOCAL )?TEMP(?:ORARY)? |UNLOGGED )?TABLE (?:IF NOT EXISTS )?${TABLE}`,
  'gi',
);
/** `ADD [COLUMN] name`: a column added to the table altered before it (the name is its group). */
const ADDED_COLUMN = new RegExp(
  String.raw`\bADD (?!CONSTRAINT\b|PRIMARY\b|UNIQUE\b|FOREIGN\b|CHECK\b|EXCLUDE\b)(?:COLUMN )?(?:IF NOT EXISTS )?(${IDENT})`,
  'gi',
);
/** A table constraint added by `ALTER TABLE`: its kind, and the columns it lists (if simple names). */
const ADDED_CONSTRAINT_SQL = new RegExp(
  String.raw`\bADD (?:CONSTRAINT ${IDENT} )?(CHECK|UNIQUE|PRIMARY KEY|EXCLUDE|FOREIGN KEY)\b(?: ?\(([^()]*)\))?`,
  'gi',
);
/** `CREATE UNIQUE INDEX … ON table (columns)`: the table, and the columns (if simple names). */
const UNIQUE_INDEX_SQL = new RegExp(
  String.raw`\bCREATE UNIQUE INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?(?:${IDENT} )?ON (?:ONLY )?${TABLE}(?: USING \w+)?(?: ?\(([^()]*)\))?`,
  'gi',
);
/** `DELETE FROM table` with nothing after it: every row goes. */
const DELETE_ALL_SQL = new RegExp(
  String.raw`\bDELETE FROM (?:ONLY )?${IDENT}(?:\.${IDENT})? ?\*? ?(?:;|$)`,
  'i',
);

const ADDED_CONSTRAINT = 'adds a constraint to an existing table that their writes may violate';
const CONSTRAINT_ADDED: Construct = { name: 'ADD CONSTRAINT', breaks: ADDED_CONSTRAINT };
const UNIQUE_INDEX_ADDED: Construct = { name: 'CREATE UNIQUE INDEX', breaks: ADDED_CONSTRAINT };
const CALLBACK_UNREAD: Construct = {
  name: 'alterTable callback not written in the call',
  breaks: 'may change their columns in ways this check cannot read (write it in the call)',
};
const UNIQUE_INDEX_DROPPED: Construct = {
  name: 'dropIndex of a unique index',
  breaks: 'drops a unique index their ON CONFLICT relies on',
};
const DELETE_ALL: Construct = {
  name: 'DELETE without WHERE',
  breaks: 'deletes every row of a table they use',
};
const DEFAULT_REMOVED: Construct = {
  name: '.defaultTo(null)',
  breaks: 'removes a default that their inserts may rely on to fill a NOT NULL column',
};
const NOT_NULL_WITHOUT_DEFAULT: Construct = {
  name: 'NOT NULL without a default on an existing table',
  breaks: 'adds a column their inserts leave empty',
};

/** The knex calls on a table builder that add a constraint to the table rather than a column. */
const TABLE_CONSTRAINTS = new Set(['unique', 'primary', 'foreign', 'check']);
/** The knex calls on a table builder that neither add a column nor a constraint (drops are found by name). */
const NOT_A_COLUMN = /^(?:drop|rename|set|index$|comment$|engine$|charset$|collate$|inherits$|queryContext$)/;

type FunctionLike = ts.FunctionDeclaration | ts.FunctionExpression | ts.ArrowFunction;

/** A migration as the check reads it. */
interface Migration {
  file: ts.SourceFile;
  /** The top-level functions by name: declarations, and constants holding a function. */
  functions: Map<string, FunctionLike>;
  /** The exported `up` function, the one knex runs. */
  up?: FunctionLike;
  /** The exported `down` function, unless something else in the file refers to it: it is not checked. */
  down?: FunctionLike;
}

/** `node` without the brackets, casts and `!` around it. */
function unwrap(node: ts.Expression): ts.Expression {
  while (
    ts.isParenthesizedExpression(node) ||
    ts.isAsExpression(node) ||
    ts.isSatisfiesExpression(node) ||
    ts.isNonNullExpression(node) ||
    ts.isTypeAssertionExpression(node)
  )
    node = node.expression;
  return node;
}

/** Whether `node` is the name a declaration binds (a variable, function, parameter, import, …). */
function bindsName(node: ts.Identifier): boolean {
  const parent = node.parent as ts.Node & { name?: ts.Node };
  return (
    parent.name === node &&
    (ts.isVariableDeclaration(parent) ||
      ts.isFunctionDeclaration(parent) ||
      ts.isFunctionExpression(parent) ||
      ts.isClassDeclaration(parent) ||
      ts.isClassExpression(parent) ||
      ts.isParameter(parent) ||
      ts.isBindingElement(parent) ||
      ts.isImportSpecifier(parent) ||
      ts.isImportClause(parent) ||
      ts.isNamespaceImport(parent) ||
      ts.isImportEqualsDeclaration(parent) ||
      ts.isEnumDeclaration(parent) ||
      ts.isModuleDeclaration(parent))
  );
}

/** Every node under `root`, in source order, except the subtree of `skip`. */
function forEachNode(root: ts.Node, visit: (node: ts.Node) => void, skip?: ts.Node): void {
  const walk = (node: ts.Node): void => {
    if (node === skip) return;
    visit(node);
    ts.forEachChild(node, walk);
  };
  ts.forEachChild(root, walk);
}

/** How many declarations in the file bind `name`: one means every use of it is that one. */
function declarationCount(file: ts.SourceFile, name: string): number {
  let count = 0;
  forEachNode(file, (node) => {
    if (ts.isIdentifier(node) && node.text === name && bindsName(node)) count++;
  });
  return count;
}

/** Whether identifier `name` is used as a value outside `except` (not as a property's or declaration's name). */
function referenced(file: ts.SourceFile, name: string, except: ts.Node): boolean {
  let found = false;
  forEachNode(
    file,
    (node) => {
      if (!ts.isIdentifier(node) || node.text !== name || bindsName(node)) return;
      const parent = node.parent as ts.Node & { name?: ts.Node };
      const isPropertyName =
        parent.name === node &&
        (ts.isPropertyAccessExpression(parent) ||
          ts.isPropertyAssignment(parent) ||
          ts.isMethodDeclaration(parent) ||
          ts.isPropertyDeclaration(parent) ||
          ts.isPropertySignature(parent));
      if (!isPropertyName) found = true;
    },
    except,
  );
  return found;
}

function parse(source: string): Migration {
  const file = ts.createSourceFile('migration.ts', source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const functions = new Map<string, FunctionLike>();
  const exported = new Set<string>();
  for (const statement of file.statements) {
    const isExported = ts.canHaveModifiers(statement)
      ? (ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false)
      : false;
    const add = (name: string, fn: FunctionLike) => {
      functions.set(name, fn);
      if (isExported) exported.add(name);
    };
    if (ts.isFunctionDeclaration(statement) && statement.name && statement.body)
      add(statement.name.text, statement);
    else if (ts.isVariableStatement(statement) && statement.declarationList.flags & ts.NodeFlags.Const)
      for (const declaration of statement.declarationList.declarations) {
        const value = declaration.initializer && unwrap(declaration.initializer);
        if (
          ts.isIdentifier(declaration.name) &&
          value &&
          (ts.isFunctionExpression(value) || ts.isArrowFunction(value))
        )
          add(declaration.name.text, value);
      }
  }
  const down = exported.has('down') ? functions.get('down') : undefined;
  const up = exported.has('up') && declarationCount(file, 'up') === 1 ? functions.get('up') : undefined;
  return { file, functions, up, down: down && !referenced(file, 'down', down) ? down : undefined };
}

/** Whether `node` is a string, or is built of strings with `+` or a template: SQL the check reads. */
function isStringish(node: ts.Node): boolean {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node))
    return true;
  if (ts.isParenthesizedExpression(node)) return isStringish(node.expression);
  return (
    ts.isBinaryExpression(node) &&
    node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
    (isStringish(node.left) || isStringish(node.right))
  );
}

/**
 * The text of a string-built expression, escapes decoded; each part only known at run time reads
 * ` _ `, as an identifier would (`ALTER ${column} TYPE` is `ALTER _ TYPE`).
 */
function render(node: ts.Expression): string {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node))
    return (
      node.head.text + node.templateSpans.map((span) => render(span.expression) + span.literal.text).join('')
    );
  if (ts.isParenthesizedExpression(node)) return render(node.expression);
  if (ts.isBinaryExpression(node) && isStringish(node)) return render(node.left) + render(node.right);
  return ' _ ';
}

/** The name a call's callee looks up on an object (`a.name`, `a['name']`), if it is one. */
function memberName(callee: ts.Expression): string | undefined {
  const node = unwrap(callee);
  if (ts.isPropertyAccessExpression(node)) return node.name.text;
  if (ts.isElementAccessExpression(node) && isStringish(node.argumentExpression))
    return render(node.argumentExpression).trim();
  return undefined;
}

/** What the check reads in a migration outside its `down`. */
interface Read {
  /** Its string-built expressions' texts, in source order. */
  texts: string[];
  /** The names it looks up on objects: builder methods among them. */
  members: Set<string>;
  /** Its calls, in source order. */
  calls: ts.CallExpression[];
}

function readChecked(migration: Migration): Read {
  const read: Read = { texts: [], members: new Set(), calls: [] };
  const visit = (node: ts.Node): void => {
    if (node === migration.down) return;
    if (isStringish(node)) {
      read.texts.push(render(node as ts.Expression));
      visitParts(node as ts.Expression);
      return;
    }
    if (ts.isCallExpression(node)) read.calls.push(node);
    const name =
      ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)
        ? memberName(node)
        : undefined;
    if (name !== undefined) read.members.add(name);
    if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
      const key = node.propertyName ?? node.name;
      if (ts.isIdentifier(key) || ts.isStringLiteral(key)) read.members.add(key.text);
    }
    ts.forEachChild(node, visit);
  };
  /** The parts of a string-built expression that are no strings: they may hold strings and calls of their own. */
  const visitParts = (node: ts.Expression): void => {
    const parts = ts.isTemplateExpression(node)
      ? node.templateSpans.map((span) => span.expression)
      : ts.isParenthesizedExpression(node)
        ? [node.expression]
        : ts.isBinaryExpression(node)
          ? [node.left, node.right]
          : [];
    for (const part of parts) (isStringish(part) ? visitParts : visit)(part);
  };
  ts.forEachChild(migration.file, visit);
  return read;
}

/** A chain of calls (`t.text('a').notNullable()`): its methods from the first, and what it starts from. */
interface Chain {
  methods: { name: string; call: ts.CallExpression }[];
  root: ts.Expression;
}

function chainOf(call: ts.CallExpression): Chain {
  const methods: Chain['methods'] = [];
  let node: ts.Expression = call;
  for (;;) {
    node = unwrap(node);
    if (ts.isCallExpression(node)) {
      const name = memberName(node.expression);
      if (name === undefined) break;
      methods.unshift({ name, call: node });
      node = (unwrap(node.expression) as ts.PropertyAccessExpression | ts.ElementAccessExpression).expression;
    } else if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node))
      node = node.expression;
    else break;
  }
  return { methods, root: node };
}

/** Whether `call` ends its chain: no method is called on what it returns. */
function endsChain(call: ts.CallExpression): boolean {
  const { parent } = call;
  return !(
    (ts.isPropertyAccessExpression(parent) || ts.isElementAccessExpression(parent)) &&
    parent.expression === call
  );
}

/** A table's name as written in SQL or to knex, compared without quotes, schema or case. */
const tableName = (text: string): string => text.trim().replace(/"/g, '').split('.').pop()!.toLowerCase();

/** Whether a `defaultTo` argument is no default: none, `null`, `undefined` or `knex.raw('NULL')`. */
const isNullish = (node: ts.Expression | undefined): boolean =>
  node === undefined ||
  node.kind === ts.SyntaxKind.NullKeyword ||
  (ts.isIdentifier(node) && node.text === 'undefined') ||
  ts.isVoidExpression(node) ||
  (ts.isCallExpression(node) &&
    memberName(node.expression) === 'raw' &&
    node.arguments[0] !== undefined &&
    isStringish(node.arguments[0]) &&
    /^\s*NULL\s*$/i.test(render(node.arguments[0])));

/** A default in SQL that is one: `DEFAULT NULL` is none. */
const SQL_DEFAULT = /\bDEFAULT\s+(?!NULL\b)|\bGENERATED\b/i;

/** The column names an argument lists as literals (`'a'` or `['a', 'b']`), if it does. */
function columnsOf(node: ts.Expression | undefined): string[] | undefined {
  if (node === undefined) return undefined;
  if (isStringish(node)) return [render(node).trim()];
  if (!ts.isArrayLiteralExpression(node) || !node.elements.every(isStringish)) return undefined;
  return node.elements.map((element) => render(element).trim());
}

/** What the migration does to tables: constraints on what it creates or adds break no one. */
interface Tables {
  /** The tables it creates. */
  created: Set<string>;
  /** The columns it adds, by table. */
  added: Map<string, Set<string>>;
}

/** The names of a column list (`a, "b"`), compared without quotes or case. */
const columnNames = (list: string): string[] => list.split(',').map((c) => tableName(c));

/** Whether every column in `columns` is one the migration adds to `table` (old writers leave them empty). */
function allAdded(tables: Tables, table: string | undefined, columns: string[] | undefined): boolean {
  const added = table === undefined ? undefined : tables.added.get(table);
  return !!added && !!columns && columns.length > 0 && columns.every((c) => added.has(tableName(c)));
}

/** The table `ALTER TABLE` names last before `index` in `sql`. */
function alteredBefore(sql: string, index: number): string | undefined {
  const table = [...sql.matchAll(ALTERED_TABLE)].filter((m) => m.index < index).pop();
  return table && tableName(table[1]!);
}

/**
 * The `alterTable`/`table` calls with a callback: the table's name (if written) and the callback's
 * chains of calls; a callback passed by a name that is no top-level function cannot be read.
 */
function alterCallbacks(
  migration: Migration,
  read: Read,
): { table?: string; chains: Chain[]; unread?: boolean }[] {
  return read.calls.flatMap((call) => {
    if (!/^(alterTable|table)$/.test(memberName(call.expression) ?? '') || call.arguments.length < 2)
      return [];
    const [table, argument] = call.arguments.map(unwrap);
    const name = table && isStringish(table) ? tableName(render(table)) : undefined;
    const callback =
      ts.isArrowFunction(argument!) || ts.isFunctionExpression(argument!)
        ? argument
        : ts.isIdentifier(argument!) && declarationCount(migration.file, argument.text) === 1
          ? migration.functions.get(argument.text)
          : undefined;
    if (!callback) return [{ table: name, chains: [], unread: true }];
    const chains = read.calls
      .filter((c) => c.pos >= callback.pos && c.end <= callback.end && endsChain(c))
      .map(chainOf)
      .filter((chain) => chain.methods.length > 0);
    return [{ table: name, chains }];
  });
}

/** Whether a chain in a table callback adds or alters a column (rather than a constraint, index or drop). */
const isColumnChain = ({ methods }: Chain): boolean =>
  !TABLE_CONSTRAINTS.has(methods[0]!.name) && !NOT_A_COLUMN.test(methods[0]!.name);

function tablesOf(migration: Migration, read: Read, sql: string[]): Tables {
  const tables: Tables = { created: new Set(), added: new Map() };
  const add = (table: string | undefined, column: string) => {
    if (table === undefined) return;
    if (!tables.added.has(table)) tables.added.set(table, new Set());
    tables.added.get(table)!.add(tableName(column));
  };
  for (const call of read.calls) {
    const [first] = call.arguments;
    const creates = /^createTable(IfNotExists|Like)?$/.test(memberName(call.expression) ?? '');
    if (creates && first && isStringish(first)) tables.created.add(tableName(render(first)));
  }
  for (const { table, chains } of alterCallbacks(migration, read))
    for (const chain of chains.filter(isColumnChain))
      if (!chain.methods.some((m) => m.name === 'alter'))
        for (const column of columnsOf(chain.methods[0]!.call.arguments[0]) ?? []) add(table, column);
  for (const text of sql) {
    for (const m of text.matchAll(CREATED_TABLE)) tables.created.add(tableName(m[1]!));
    for (const m of text.matchAll(ADDED_COLUMN)) add(alteredBefore(text, m.index), m[1]!);
  }
  return tables;
}

/** What the `alterTable`/`table` callbacks on existing tables do to them, judged per chain of calls. */
function alterFindings(migration: Migration, read: Read, tables: Tables): Construct[] {
  const found: Construct[] = [];
  for (const { table, chains, unread } of alterCallbacks(migration, read)) {
    if (table !== undefined && tables.created.has(table)) continue;
    if (unread) found.push(CALLBACK_UNREAD);
    for (const { methods } of chains) {
      const [first] = methods;
      if (!TABLE_CONSTRAINTS.has(first!.name)) continue;
      const onColumns = first!.name === 'unique' || first!.name === 'foreign';
      if (!(onColumns && allAdded(tables, table, columnsOf(first!.call.arguments[0]))))
        found.push({ name: `t.${first!.name}()`, breaks: ADDED_CONSTRAINT });
    }
    for (const { methods } of chains.filter(isColumnChain)) {
      const defaults = methods.filter((m) => m.name === 'defaultTo').map((m) => m.call.arguments[0]);
      const removed = defaults.some(isNullish);
      const typeArgument = methods[0]!.name === 'specificType' ? methods[0]!.call.arguments[1] : undefined;
      const type = typeArgument && isStringish(typeArgument) ? render(typeArgument) : '';
      const notNull =
        methods.some((m) => m.name === 'notNullable' || m.name === 'primary') ||
        /\bNOT\s+NULL\b|\bPRIMARY\s+KEY\b/i.test(type);
      const hasDefault =
        defaults.some((d) => !isNullish(d)) ||
        /^(big)?increments$/.test(methods[0]!.name) ||
        SQL_DEFAULT.test(type) ||
        /serial\b/i.test(type);
      if (removed) found.push(DEFAULT_REMOVED);
      if (notNull && (!hasDefault || removed)) found.push(NOT_NULL_WITHOUT_DEFAULT);
    }
  }
  return found;
}

/**
 * A knex `dropIndex` whose index name is not written, or reads like a unique index's (`…unique`,
 * `…pkey`, `…_key`): knex names the indexes it creates without a name `…_index`.
 */
const dropsUniqueIndex = (read: Read): boolean =>
  read.calls.some((call) => {
    if (memberName(call.expression) !== 'dropIndex' || call.arguments.length < 2) return false;
    const name = call.arguments[1]!;
    return !isStringish(name) || /unique|pkey|_key$/i.test(render(name).trim());
  });

/** A `delete()`/`del()` on a query with no `where…` in its chain: every row goes. */
function deletesAll(read: Read): boolean {
  return read.calls.filter(endsChain).some((call) => {
    const { methods, root } = chainOf(call);
    const names = methods.map((m) => m.name);
    return (
      methods.some((m) => /^(del|delete)$/.test(m.name) && m.call.arguments.length === 0) &&
      (ts.isCallExpression(root) || names.some((n) => /^(from|table|into)$/.test(n))) &&
      !names.some((n) => /where/i.test(n))
    );
  });
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

/** `ADD [COLUMN] … NOT NULL` (or `PRIMARY KEY`) without `DEFAULT` (or a generated value) in SQL. */
function addsNotNullWithoutDefault(sql: string): boolean {
  const add = /\bADD\s+(?!CONSTRAINT\b|PRIMARY\b|UNIQUE\b|FOREIGN\b|CHECK\b|EXCLUDE\b|VALUE\b)/gi;
  for (let m = add.exec(sql); m; m = add.exec(sql)) {
    const clause = sql.slice(m.index, clauseEnd(sql, m.index + m[0].length));
    if (/\bNOT\s+NULL\b|\bPRIMARY\s+KEY\b/i.test(clause) && !SQL_DEFAULT.test(clause)) return true;
  }
  return false;
}

/**
 * What the SQL (one of its readings) does to existing tables. A unique or foreign key constraint
 * only on columns the migration adds binds no old writer: they leave those columns empty.
 */
function sqlFindings(sql: string, tables: Tables): Construct[] {
  const found: Construct[] = SQL_PHRASES.filter((c) => c.pattern.test(sql));
  if (addsNotNullWithoutDefault(sql)) found.push(NOT_NULL_WITHOUT_DEFAULT);
  for (const m of sql.matchAll(ADDED_CONSTRAINT_SQL)) {
    const table = alteredBefore(sql, m.index);
    const onColumns = /^(UNIQUE|FOREIGN KEY)$/i.test(m[1]!) && m[2] !== undefined;
    const binds = !(table !== undefined && tables.created.has(table));
    if (binds && !(onColumns && allAdded(tables, table, columnNames(m[2]!)))) found.push(CONSTRAINT_ADDED);
  }
  for (const m of sql.matchAll(UNIQUE_INDEX_SQL)) {
    const table = tableName(m[1]!);
    const binds = !tables.created.has(table);
    if (binds && !(m[2] !== undefined && allAdded(tables, table, columnNames(m[2]))))
      found.push(UNIQUE_INDEX_ADDED);
  }
  return found;
}

/**
 * SQL as PostgreSQL reads it: every run of whitespace (however the string wrote it: `\n`, `\t`,
 * `\r`) is one space, and a quoted identifier stands apart (`COLUMN"x"TYPE`); and a second reading without comments, which PostgreSQL takes for
 * whitespace too (`DROP/**\/TABLE`). Both are checked: stripping a `--` that sits inside a SQL
 * string could hide what follows it.
 */
const readings = (text: string): string[] =>
  [text, text.replace(/\/\*[\s\S]*?\*\/|--[^\n]*/g, ' ')].map((t) =>
    t.replace(/"(?:[^"]|"")*"/g, ' $& ').replace(/\s+/g, ' '),
  );

/** The breaking constructs in what the check read. */
function breakingConstructs(migration: Migration, read: Read): Construct[] {
  const sql = readings(read.texts.join(' '));
  const tables = tablesOf(migration, read, sql);
  const found: Construct[] = [
    ...BUILDER_CALLS.filter((c) => [...read.members].some((member) => c.methods.test(member))),
    ...sql.flatMap((reading) => sqlFindings(reading, tables)),
    ...alterFindings(migration, read, tables),
  ];
  if (dropsUniqueIndex(read)) found.push(UNIQUE_INDEX_DROPPED);
  if (deletesAll(read) || read.texts.some((text) => readings(text).some((t) => DELETE_ALL_SQL.test(t))))
    found.push(DELETE_ALL);
  const names = new Set<string>();
  return found
    .filter(({ name }) => !names.has(name) && names.add(name))
    .map(({ name, breaks }) => ({ name, breaks }));
}

const COMPATIBILITY_MODULE = '../src/db/compatibility-level.js';
const RAISE = 'raiseCompatibilityLevel';

/** The local name the project's `raiseCompatibilityLevel` is imported by, if nothing else in the file binds it. */
function importedRaise(file: ts.SourceFile): string | undefined {
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const clause = statement.importClause;
    const bindings = clause?.namedBindings;
    if (statement.moduleSpecifier.text !== COMPATIBILITY_MODULE || clause?.isTypeOnly || !bindings) continue;
    if (!ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements)
      if (!element.isTypeOnly && (element.propertyName ?? element.name).text === RAISE)
        return declarationCount(file, element.name.text) === 1 ? element.name.text : undefined;
  }
  return undefined;
}

/** The call `statement` awaits, if it is `await call(…);`. */
function awaitedCall(statement: ts.Statement): ts.CallExpression | undefined {
  if (!ts.isExpressionStatement(statement)) return undefined;
  const awaited = unwrap(statement.expression);
  if (!ts.isAwaitExpression(awaited)) return undefined;
  const call = unwrap(awaited.expression);
  return ts.isCallExpression(call) ? call : undefined;
}

/** Whether `statement` may return (outside the functions it defines). */
function mayReturn(statement: ts.Statement): boolean {
  let found = ts.isReturnStatement(statement);
  const walk = (node: ts.Node): void => {
    if (found || ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isReturnStatement(node)) found = true;
    else ts.forEachChild(node, walk);
  };
  ts.forEachChild(statement, walk);
  return found;
}

/**
 * The calls `up` always makes: those it awaits as statements of its body before anything that may
 * return, and those the top-level functions it calls that way make the same way.
 */
function alwaysMade(migration: Migration): Set<ts.CallExpression> {
  const made = new Set<ts.CallExpression>();
  const seen = new Set<FunctionLike>();
  const follow = (fn: FunctionLike | undefined): void => {
    if (!fn || seen.has(fn) || !fn.body || !ts.isBlock(fn.body)) return;
    seen.add(fn);
    for (const statement of fn.body.statements) {
      if (mayReturn(statement)) return;
      const call = awaitedCall(statement);
      if (!call) continue;
      made.add(call);
      const callee = call.expression;
      if (ts.isIdentifier(callee) && declarationCount(migration.file, callee.text) === 1)
        follow(migration.functions.get(callee.text));
    }
  };
  follow(migration.up);
  return made;
}

/** A `raiseCompatibilityLevel` call: where it is, and its arguments as far as they are literals in it. */
interface RaiseCall {
  /** Whether it calls the function imported from the project's compatibility-level module. */
  imported: boolean;
  /** Whether `up` always makes it. */
  alwaysMade: boolean;
  /** The `level` property, when it is a string literal. */
  level?: string;
  /** The text of the `reason` property's string literals. */
  reason: string;
  /** The `raisedByVersion` property, when it is a string literal. */
  raisedByVersion?: string;
}

/** The value of property `key` in the object literal `node`, if it is written there (and no spread may replace it). */
function property(node: ts.Expression | undefined, key: string): ts.Expression | undefined {
  const object = node && unwrap(node);
  if (!object || !ts.isObjectLiteralExpression(object)) return undefined;
  let value: ts.Expression | undefined;
  for (const p of object.properties) {
    if (ts.isSpreadAssignment(p)) value = undefined;
    else if (p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) && p.name.text === key)
      value = ts.isPropertyAssignment(p) ? p.initializer : undefined;
  }
  return value;
}

/** The contents of `node` when it is one string literal (no `${…}`). */
function literal(node: ts.Expression | undefined): string | undefined {
  const value = node && unwrap(node);
  return value && (ts.isStringLiteral(value) || ts.isNoSubstitutionTemplateLiteral(value))
    ? value.text
    : undefined;
}

/** The text of the string literals in `node`, escapes decoded. */
function literalText(node: ts.Node | undefined): string {
  if (!node) return '';
  const parts: string[] = [];
  const walk = (n: ts.Node): void => {
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateLiteralToken(n))
      parts.push(n.text);
    ts.forEachChild(n, walk);
  };
  walk(node);
  return parts.join('');
}

/** Every call named `raiseCompatibilityLevel` (or what the import names it) outside `down`. */
function raiseCalls(migration: Migration, read: Read): RaiseCall[] {
  const local = importedRaise(migration.file);
  const made = alwaysMade(migration);
  return read.calls
    .filter((call) => {
      const callee = unwrap(call.expression);
      return ts.isIdentifier(callee)
        ? callee.text === RAISE || callee.text === local
        : memberName(callee) === RAISE;
    })
    .map((call) => {
      const callee = unwrap(call.expression);
      const options = call.arguments[1];
      return {
        imported: local !== undefined && ts.isIdentifier(callee) && callee.text === local,
        alwaysMade: made.has(call),
        level: literal(property(options, 'level')),
        reason: literalText(property(options, 'reason')),
        raisedByVersion: literal(property(options, 'raisedByVersion')),
      };
    });
}

/** Semantic versioning 2.0.0, as package.json and the CHANGELOG name releases. */
const SEMVER = /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

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
  if (!raise.imported) problems.push(`its ${RAISE} is not the one imported from '${COMPATIBILITY_MODULE}'`);
  if (!raise.alwaysMade)
    problems.push(
      `it is not a statement that up() always runs: write \`await ${RAISE}(…);\` in the body of up() ` +
        '(or of a function that up() awaits that way), not in a branch, a callback, an unused function ' +
        'or after a return',
    );
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
  const migration = parse(source);
  const read = readChecked(migration);
  const raises = raiseCalls(migration, read);
  const problems = raises.flatMap((raise) => raiseProblems(name, raise, context));
  if (raises.length > 0 && problems.length === 0) return { constructs: [], raiseProblems: [] };
  return { constructs: breakingConstructs(migration, read), raiseProblems: problems };
}

/** The levels migration `source` raises to when it runs, as written (for the migrations after it). */
export function raisedLevels(source: string): string[] {
  const migration = parse(source);
  return raiseCalls(migration, readChecked(migration)).flatMap((raise) =>
    raise.imported && raise.alwaysMade && raise.level !== undefined ? [raise.level] : [],
  );
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
