import type { Knex } from 'knex';

/**
 * The schema compatibility level (docs/adr/0016-expand-contract-migrations.md): one row naming the
 * oldest migration that code must know to run on this database. Migrations write it and the start
 * reads it before any repository is in use, so its SQL lives beside them in the database layer.
 */
export const COMPATIBILITY_TABLE = 'schema_compatibility';

export interface CompatibilityLevel {
  /** A migration name: code whose newest migration sorts before it refuses to start. */
  level: string;
  /** Why code older than `level` cannot work correctly on this database. */
  reason: string;
  /** The release whose migration raised the level, when it was known. */
  raisedByVersion: string | null;
  raisedAt: Date;
}

const MIGRATION_NAME = /^\d{3}_[a-z0-9_]+$/;
const SEMVER = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$/;

/** The recorded level; undefined on a database that has no such record yet (before migration 025). */
export async function readCompatibilityLevel(knex: Knex): Promise<CompatibilityLevel | undefined> {
  if (!(await knex.schema.hasTable(COMPATIBILITY_TABLE))) return undefined;
  const row = await knex(COMPATIBILITY_TABLE)
    .first('level', 'reason', 'raised_by_version', 'raised_at')
    .where({ id: 1 });
  if (!row) return undefined;
  return {
    level: row.level,
    reason: row.reason,
    raisedByVersion: row.raised_by_version,
    raisedAt: new Date(row.raised_at),
  };
}

export interface RaiseCompatibilityLevel {
  /** The oldest migration that code must know from now on, usually the calling migration's name. */
  level: string;
  /** What an older instance would get wrong here; shown to whoever starts one. */
  reason: string;
  /**
   * The release the calling migration ships in (semver), written in the migration: the code running
   * it may be older than that release's version number (between releases package.json still names
   * the previous one). Null only where the release is not known.
   */
  raisedByVersion: string | null;
}

/**
 * Called by a migration after which code older than `level` must not run on the database (it
 * could not work correctly, or it would bypass a security fix). Only ever raises: a level at or
 * below the recorded one leaves the row as it is. Returns whether the level changed.
 */
export async function raiseCompatibilityLevel(knex: Knex, raise: RaiseCompatibilityLevel): Promise<boolean> {
  const reason = raise.reason.replace(/\s+/g, ' ').trim();
  if (!MIGRATION_NAME.test(raise.level))
    throw new Error(`compatibility level "${raise.level}" is not a migration name (NNN_name)`);
  if (!reason) throw new Error(`raising the compatibility level to ${raise.level} needs a reason`);
  const { raisedByVersion } = raise;
  if (raisedByVersion !== null && (typeof raisedByVersion !== 'string' || !SEMVER.test(raisedByVersion)))
    throw new Error(
      `raising the compatibility level to ${raise.level} needs the release it ships in (semver), ` +
        `not ${JSON.stringify(raisedByVersion)}`,
    );
  // Compared byte-wise ("C"), as the migration list is sorted: a locale's collation may skip `_`.
  const result = await knex.raw(
    `INSERT INTO ${COMPATIBILITY_TABLE} (id, level, reason, raised_by_version, raised_at)
     VALUES (1, ?, ?, ?, now())
     ON CONFLICT (id) DO UPDATE SET level = excluded.level, reason = excluded.reason,
       raised_by_version = excluded.raised_by_version, raised_at = excluded.raised_at
     WHERE ${COMPATIBILITY_TABLE}.level COLLATE "C" < excluded.level COLLATE "C"
     RETURNING level`,
    [raise.level, reason, raisedByVersion],
  );
  return (result.rows as unknown[]).length > 0;
}
