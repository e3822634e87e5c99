import { z } from 'zod';

/** Which build answers, on which runtime and database: for admins only (docs/operations.md, "Versions"). */
export const controllerVersionViewSchema = z.object({
  // No examples: the anonymous OpenAPI document must not show anything that reads as a release.
  version: z.string().meta({ description: 'The controller release (semantic versioning, CHANGELOG.md).' }),
  runtime: z.string().meta({ description: 'The Node.js version of this instance, e.g. `v24.…`.' }),
  database: z.object({
    kind: z.enum(['postgresql', 'pglite']).meta({
      description: 'PostgreSQL, or the embedded PGlite under the data directory.',
    }),
    lastAppliedMigration: z
      .string()
      .nullable()
      .meta({
        description:
          'The migration the database applied last: during a rolling upgrade, newer than this instance may know.',
        examples: ['024_webhook_delivery_due_index'],
      }),
    compatibilityLevel: z
      .string()
      .nullable()
      .meta({
        description:
          'The oldest migration that code must know to start on this database (docs/operations.md, "Upgrades").',
        examples: ['025_compatibility_level'],
      }),
  }),
});

export type ControllerVersionView = z.infer<typeof controllerVersionViewSchema>;
