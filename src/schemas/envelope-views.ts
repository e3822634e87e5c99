import { z } from 'zod';
import { errorCatalog, type ErrorCode } from '../errors/error-catalog.js';
import { count } from './view-fields.js';

/** The Edge envelopes around every answer: `{data, meta}` and `{error, meta}`. */

export const paginationSchema = z.object({ limit: count, offset: count, totalCount: count });

export const listMetaSchema = z.object({ pagination: paginationSchema });

const empty = z.object({});

/** Update, patch, delete and other answers without content. */
export const emptyEnvelopeSchema = z.object({ data: empty, meta: empty });

/** 201: the id and the self link of the created resource. */
export const createdEnvelopeSchema = z.object({
  data: z.object({
    id: z.string(),
    _links: z.object({
      self: z.object({ href: z.string().meta({ examples: ['./identities/abc'] }) }),
    }),
  }),
  meta: empty,
});

const errorCodes = Object.keys(errorCatalog) as [ErrorCode, ...ErrorCode[]];

export const errorEnvelopeSchema = z.object({
  error: z.object({
    code: z.enum(errorCodes),
    message: z.string(),
    cause: z
      .looseObject({ field: z.string().optional(), reason: z.string().optional() })
      .optional()
      .describe('For COULD_NOT_VALIDATE: the `field` and the `reason`.'),
    requestId: z.string(),
  }),
  meta: z.object({ apiVersion: z.literal('1') }),
});
