import { z } from 'zod';

const IGNORED_MEMBER = 'Accepted for OpenZiti clients and ignored.';

/**
 * A management create, replace or patch body: strict, so a misspelt member is a 400 naming it
 * rather than silently dropped. `ignored` are members OpenZiti clients send that this service
 * has no model for; they are accepted, any JSON value, and removed before the service sees the
 * body.
 */
export function strictBody<S extends z.ZodRawShape>(shape: S, ignored: readonly string[] = []) {
  const extra: Record<string, z.ZodOptional<z.ZodUnknown>> = {};
  for (const name of ignored) extra[name] = z.unknown().optional().describe(IGNORED_MEMBER);
  return z.strictObject({ ...shape, ...extra }).transform((body) => {
    const kept: Record<string, unknown> = { ...body };
    for (const name of ignored) delete kept[name];
    return kept as z.output<z.ZodObject<S, z.core.$strict>>;
  });
}
