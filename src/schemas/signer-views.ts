import { z } from 'zod';
import { stringList, timestamps } from './view-fields.js';

/** The anonymous client view: what a client needs to start the IdP flow, no key material. */
export const publicSignerViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  issuer: z.string(),
  externalAuthUrl: z.string().nullable(),
  clientId: z.string().nullable(),
  scopes: stringList,
});

/** The management view: every field, key material included (admins only). */
export const signerViewSchema = z.object({
  ...publicSignerViewSchema.shape,
  enabled: z.boolean(),
  audience: z.string().nullable(),
  certPem: z.string().nullable(),
  jwksEndpoint: z.string().nullable(),
  kid: z.string().nullable(),
  claimsProperty: z.string(),
  useExternalId: z.boolean(),
  maxTokenLifetimeMinutes: z.number().int(),
  ...timestamps,
});

export type PublicSignerView = z.infer<typeof publicSignerViewSchema>;
export type SignerView = z.infer<typeof signerViewSchema>;
