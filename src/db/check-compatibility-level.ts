import type { Knex } from 'knex';
import { readCompatibilityLevel } from './compatibility-level.js';
import { controllerVersion } from '../version.js';
import { newestMigration } from './migration-source.js';

/** What this code is, for comparing it with the level a database records. */
export interface RunningCode {
  /** The newest migration this code knows. */
  newestMigration: string;
  /** Its release (package.json), when known. */
  version?: string;
}

/** This code's own newest migration and release. */
export function runningCode(): RunningCode {
  return { newestMigration, version: controllerVersion };
}

/**
 * Refuses (one line) to run code whose newest migration sorts before the database's compatibility
 * level: a newer release has changed the schema in a way this code would get wrong
 * (docs/adr/0016-expand-contract-migrations.md). Migration names compare as knex orders them.
 */
export async function checkCompatibilityLevel(knex: Knex, code: RunningCode = runningCode()): Promise<void> {
  const recorded = await readCompatibilityLevel(knex);
  if (!recorded || recorded.level <= code.newestMigration) return;
  const self = [code.version, `newest migration ${code.newestMigration}`].filter(Boolean).join(', ');
  // Whatever the row holds, the refusal stays one line.
  const oneLine = (text: string) => text.replace(/\s+/g, ' ');
  const level = oneLine(recorded.level);
  const raisedBy = recorded.raisedByVersion ? `, raised by ${oneLine(recorded.raisedByVersion)}` : '';
  throw new CompatibilityLevelError(
    `this controller (${self}) is older than this database allows ` +
      `(compatibility level ${level}${raisedBy}: ${oneLine(recorded.reason)}); ` +
      `start a version that knows ${level}`,
  );
}

/** The refusal above: its message is the one line to show, without a stack. */
export class CompatibilityLevelError extends Error {
  override name = 'CompatibilityLevelError';
}
