import { z } from 'zod';

/** The documentation a key of the configuration schema carries in its `.meta()`. */
export interface ConfigKeyMeta {
  title?: string;
  description?: string;
  /** What leaving a key without a default unset means, in a few words. */
  unset?: string;
  examples?: unknown[];
}

/** One key of the configuration schema, as the generated documentation needs it. */
export interface ConfigKey {
  /** Dotted YAML path, e.g. `edge.api.sessionTimeout`. */
  path: string;
  name: string;
  meta: ConfigKeyMeta;
  /** The default as written in the schema (`'30m'`, not 1800); absent when there is none. */
  default?: { value: unknown };
  /** Set for a section (a mapping of further keys). */
  children?: ConfigKey[];
}

interface Def {
  type: string;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  out?: z.core.$ZodType;
  shape?: Record<string, z.core.$ZodType>;
  defaultValue?: unknown;
}

const defOf = (schema: z.core.$ZodType) => schema._zod.def as unknown as Def;

/**
 * Looks through the wrappers of a key (optional, default, prefault, preprocess and transform
 * pipes) for its first default and the schema that holds the value.
 */
function unwrap(schema: z.core.$ZodType): { base: z.core.$ZodType; default?: { value: unknown } } {
  let found: { value: unknown } | undefined;
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if (def.type === 'default' || def.type === 'prefault') {
      found ??= { value: def.defaultValue };
      current = def.innerType!;
    } else if (def.type === 'optional' || def.type === 'nullable' || def.type === 'readonly') {
      current = def.innerType!;
    } else if (def.type === 'pipe') {
      // z.preprocess puts a transform in front, a refinement pipe puts one behind.
      current = defOf(def.in!).type === 'transform' ? def.out! : def.in!;
    } else {
      return { base: current, default: found };
    }
  }
}

/** The keys of an object schema, in schema order, with their metadata and defaults. */
export function configKeys(schema: z.core.$ZodType, prefix = ''): ConfigKey[] {
  const { base } = unwrap(schema);
  const shape = defOf(base).shape;
  if (!shape) throw new Error(`${prefix || '(root)'} is not an object schema`);
  return Object.entries(shape).map(([name, child]) => {
    const path = prefix ? `${prefix}.${name}` : name;
    const meta = (z.globalRegistry.get(child) ?? {}) as ConfigKeyMeta;
    const inner = unwrap(child);
    if (defOf(inner.base).type === 'object') return { path, name, meta, children: configKeys(child, path) };
    return { path, name, meta, ...(inner.default ? { default: inner.default } : {}) };
  });
}

/** Every value key (not section) below `keys`, depth first. */
export const leavesOf = (keys: ConfigKey[]): ConfigKey[] =>
  keys.flatMap((k) => (k.children ? leavesOf(k.children) : [k]));
