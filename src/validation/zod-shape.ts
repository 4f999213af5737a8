// What a zod schema accepts at a path of its input, read from the schema itself: the field names
// of the object found there (for "unknown key … did you mean …" and for unknown request fields).
// Wrappers (optional, default, nullable, preprocess, refinements) are looked through; a record or
// a free JSON value has no fixed names, so nothing under it is unknown.
import type { z } from 'zod';

interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  options?: readonly z.ZodType[];
  catchall?: z.ZodType;
  getter?: () => z.ZodType;
  valueType?: z.ZodType;
}

const defOf = (schema: z.ZodType): SchemaDef => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

const WRAPPERS = new Set(['optional', 'default', 'prefault', 'nullable', 'nonoptional', 'catch', 'readonly']);

/** The schema with its wrappers removed: what the value itself must be. */
export function unwrapSchema(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if (WRAPPERS.has(def.type) && def.innerType !== undefined) current = def.innerType;
    else if (def.type === 'pipe' && def.in !== undefined && defOf(def.in).type !== 'transform') current = def.in;
    else if (def.type === 'pipe' && def.in !== undefined) current = (def as { out?: z.ZodType }).out ?? def.in; // preprocess: transform → schema
    else if (def.type === 'lazy' && def.getter !== undefined) current = def.getter();
    else return current;
  }
}

/** An object's fields by name, or undefined when the schema is not an object with fixed fields. */
export function fieldsOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const def = defOf(unwrapSchema(schema));
  if (def.type !== 'object' || def.shape === undefined) return undefined;
  // An object with a catch-all takes any name (z.looseObject, .catchall()).
  if (def.catchall !== undefined && defOf(def.catchall).type !== 'never') return undefined;
  return def.shape;
}

/** The schema of an array's items, or undefined. */
export function elementOf(schema: z.ZodType): z.ZodType | undefined {
  const def = defOf(unwrapSchema(schema));
  return def.type === 'array' ? def.element : undefined;
}

/** The schema found at `path` (object fields, record values and array indexes), or undefined where it has no fixed shape. */
export function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  let current: z.ZodType | undefined = schema;
  for (const segment of path) {
    if (current === undefined) return undefined;
    if (typeof segment === 'number') {
      current = elementOf(current);
      continue;
    }
    const def = defOf(unwrapSchema(current));
    current = def.type === 'record' ? def.valueType : fieldsOf(current)?.[String(segment)];
  }
  return current;
}
