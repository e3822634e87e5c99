import { z } from 'zod';

export const passwordLoginSchema = z.object({
  username: z.string().min(1).max(256),
  password: z.string().min(1).max(1024),
});

/** `configTypes` (they become the `z_ct` claim): at most this many, each at most this long. */
export const MAX_CONFIG_TYPES = 32;
export const MAX_CONFIG_TYPE_LENGTH = 256;

/** Body members every primary login may carry besides its credential. */
export const loginExtrasSchema = z.object({
  configTypes: z.array(z.string().max(MAX_CONFIG_TYPE_LENGTH)).max(MAX_CONFIG_TYPES).optional(),
});
