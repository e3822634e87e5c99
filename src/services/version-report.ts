import { readCompatibilityLevel } from '../db/compatibility-level.js';
import type { Database } from '../db/create-database.js';
import { migrationsRepository } from '../repositories/migrations-repository.js';
import type { ControllerVersionView } from '../schemas/version-views.js';
import { controllerVersion, runtimeVersion } from '../version.js';

const DATABASE_KIND = { pg: 'postgresql', pglite: 'pglite' } as const;

/** What an admin is told about the running build and the database it serves from. */
export function createVersionReport({ database }: { database: Database }) {
  return {
    async current(): Promise<ControllerVersionView> {
      return {
        version: controllerVersion,
        runtime: runtimeVersion,
        database: {
          kind: DATABASE_KIND[database.kind],
          lastAppliedMigration: await migrationsRepository.lastApplied(database.knex),
          compatibilityLevel: (await readCompatibilityLevel(database.knex))?.level ?? null,
        },
      };
    },
  };
}

export type VersionReport = ReturnType<typeof createVersionReport>;
