import { z } from 'zod';

/** Which build answers, on which runtime and database: for admins only (docs/operations.md, "Versions"). */
export const controllerVersionViewSchema = z.object({
  version: z.string().meta({ description: 'The controller release (semver, CHANGELOG.md).', examples: ['0.2.0'] }),
  runtime: z.string().meta({ description: 'The Node.js version of this instance.', examples: ['v24.21.0'] }),
  database: z.object({
    kind: z.enum(['postgresql', 'pglite']).meta({
      description: 'PostgreSQL, or the embedded PGlite under the data directory.',
    }),
    newestMigration: z.string().nullable().meta({
      description:
        'The migration the database applied last: during a rolling upgrade, newer than this instance may know.',
      examples: ['024_webhook_delivery_due_index'],
    }),
  }),
});

export type ControllerVersionView = z.infer<typeof controllerVersionViewSchema>;
