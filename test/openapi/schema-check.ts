/**
 * Checks a JSON value against a schema of an OpenAPI document: the subset the documents use
 * (local $ref, allOf, anyOf, type, enum, const, required, properties, additionalProperties: false,
 * items). Formats and lengths are left out: the point is that the documented shape is the real one.
 */
export function schemaProblems(doc: any, schema: any, value: unknown, at = '$'): string[] {
  if (schema === undefined || schema === true) return [];
  if (schema.$ref) return schemaProblems(doc, resolve(doc, schema.$ref), value, at);
  const problems: string[] = [];
  for (const part of schema.allOf ?? []) problems.push(...schemaProblems(doc, part, value, at));
  if (schema.anyOf && !schema.anyOf.some((s: any) => schemaProblems(doc, s, value, at).length === 0)) {
    problems.push(`${at}: matches none of anyOf`);
  }
  if (schema.type !== undefined && ![schema.type].flat().some((t: string) => hasType(value, t))) {
    return [...problems, `${at}: ${JSON.stringify(value)} is not of type ${JSON.stringify(schema.type)}`];
  }
  if (schema.enum && !schema.enum.includes(value))
    problems.push(`${at}: ${JSON.stringify(value)} not in enum`);
  if ('const' in schema && schema.const !== value)
    problems.push(`${at}: ${JSON.stringify(value)} is not the const`);
  if (isObject(value)) problems.push(...objectProblems(doc, schema, value, at));
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => problems.push(...schemaProblems(doc, schema.items, item, `${at}[${i}]`)));
  }
  return problems;
}

function objectProblems(doc: any, schema: any, value: Record<string, unknown>, at: string): string[] {
  const problems: string[] = [];
  for (const name of schema.required ?? []) {
    if (!(name in value)) problems.push(`${at}.${name}: required but missing`);
  }
  const properties = schema.properties ?? {};
  for (const [name, member] of Object.entries(value)) {
    if (name in properties) problems.push(...schemaProblems(doc, properties[name], member, `${at}.${name}`));
    else if (schema.additionalProperties === false) problems.push(`${at}.${name}: not documented`);
  }
  return problems;
}

export function resolve(doc: any, ref: string): any {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((node, key) => node?.[key], doc);
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    default:
      return typeof value === type;
  }
}
