import { fixedStatement, type FixedStatement } from '../db/fixed-statement.js';

const quoted = (name: string) => `"${name}"`;

/**
 * `select <columns> from <table> where <each of where> = ? limit 1`, built once at module load
 * for the reads every login sends (src/db/fixed-statement.ts). Names are the repositories' own
 * constants, never input.
 */
export function fixedSelectFirst(
  table: string,
  columns: readonly string[],
  where: readonly string[],
): FixedStatement {
  const cols = columns.map((c) => `${quoted(table)}.${quoted(c)}`).join(', ');
  const conditions = where.map((c) => `${quoted(table)}.${quoted(c)} = ?`).join(' and ');
  return fixedStatement(`select ${cols} from ${quoted(table)} where ${conditions} limit 1`);
}
