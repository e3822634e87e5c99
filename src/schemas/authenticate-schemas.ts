import { z } from 'zod';

export const passwordLoginSchema = z.object({
  username: z.string().min(1).max(256),
  password: z.string().min(1).max(1024),
  configTypes: z.array(z.string().max(256)).max(32).optional(),
});
