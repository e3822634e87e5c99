import { z } from 'zod';

/** A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) or any other OpenAPI object. */
export type JsonSchema = { [key: string]: unknown };

/**
 * The JSON Schema of what a request may send, derived from the zod schema that parses it, so the
 * document cannot drift from validation. `io: 'input'` describes the wire side of transforms and
 * defaults; anything zod cannot express (a custom refinement's rule) becomes "any" rather than
 * stopping the start: the route still enforces it and answers COULD_NOT_VALIDATE.
 */
export function fromZod(schema: z.ZodType, descriptions: Record<string, string> = {}): JsonSchema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  for (const [name, description] of Object.entries(descriptions)) {
    if (!properties[name]) throw new Error(`fromZod: no property ${name} to describe`);
    properties[name] = { ...properties[name], description };
  }
  return json;
}

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

export const str: JsonSchema = { type: 'string' };

/** An object whose members are all required except those named `optional`. */
export function obj(
  properties: Record<string, JsonSchema>,
  optional: string[] = [],
  extra: JsonSchema = {},
): JsonSchema {
  const required = Object.keys(properties).filter((k) => !optional.includes(k));
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), ...extra };
}
