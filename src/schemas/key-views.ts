import { z } from 'zod';
import { instant } from './view-fields.js';

export const keyStateSchema = z.enum(['published', 'signing', 'retiring']);

/** An OIDC signing key and its state; never key material. */
export const keyViewSchema = z.object({
  kid: z.string(),
  alg: z.string(),
  state: keyStateSchema,
  createdAt: instant,
  signsFrom: instant,
  retiredAt: instant.nullable(),
});

export type KeyState = z.infer<typeof keyStateSchema>;
export type KeyView = z.infer<typeof keyViewSchema>;
