import { z } from 'zod';

export const passwordLoginSchema = z.object({
  username: z.string().min(1).max(256),
  password: z.string().min(1).max(1024),
});

/** Body members every primary login may carry besides its credential. */
export const loginExtrasSchema = z.object({
  configTypes: z.array(z.string().max(256)).max(32).optional(),
});
