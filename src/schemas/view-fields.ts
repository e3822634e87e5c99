import { z } from 'zod';

/**
 * Building blocks of the response views: what the Edge APIs send, as zod schemas the services are
 * typed against and the OpenAPI documents are generated from (src/openapi/response-schemas.ts).
 * Nothing parses a response at run time; the types and the tests hold the views to them.
 */

/** An instant as `Date.prototype.toISOString` writes it. */
export const instant = z.iso.datetime();

export const timestamps = { createdAt: instant, updatedAt: instant };

export const stringList = z.array(z.string());

/** A whole number the server counts (limits, lengths, seconds). */
export const count = z.number().int().nonnegative();

export const idAndName = z.object({ id: z.string(), name: z.string() });
