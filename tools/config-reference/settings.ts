// Every setting the zod schema accepts, with its type and default, read from the schema itself
// (zod 4 keeps each schema's definition on `_zod.def`), so the reference cannot drift from it.
import type { ZodType } from 'zod';

interface Definition {
  type: string;
  innerType?: SchemaNode;
  defaultValue?: unknown;
  in?: SchemaNode;
  out?: SchemaNode;
  options?: SchemaNode[];
  element?: SchemaNode;
  valueType?: SchemaNode;
  shape?: Record<string, SchemaNode>;
  entries?: Record<string, string | number>;
  values?: unknown[];
  catchall?: SchemaNode;
}

interface SchemaNode {
  _zod: { def: Definition };
  minValue?: number | null;
  maxValue?: number | null;
  isInt?: boolean;
  format?: string | null;
}

/** One key of the configuration, at any depth. */
export interface Setting {
  /** Dotted path: `push.timeoutMs`, `auth.issuers[].id`, `agents.<name>.limits.burst`. */
  path: string;
  /** The object the key belongs to (`` for the top level, `auth.issuers[]`, …). */
  parent: string;
  key: string;
  type: string;
  /** The default as JSON, when the schema has one that is not an object. */
  defaultJson: string | undefined;
  /** Whether a value must be given (no default, not optional). */
  required: boolean;
  /** Whether the key holds an object (or a list or map of them) listed in its own section. */
  nested: boolean;
}

/** An object of settings: the top level, or one nested in it. */
export interface SettingsObject {
  path: string;
  /** Its keys, in schema order. */
  keys: string[];
  settings: Setting[];
}

export function collectSettings(schema: ZodType): SettingsObject[] {
  const objects: SettingsObject[] = [];
  walkObject(schema as unknown as SchemaNode, '', objects);
  return objects;
}

function walkObject(node: SchemaNode, path: string, objects: SettingsObject[]): void {
  const shape = node._zod.def.shape ?? {};
  const object: SettingsObject = { path, keys: Object.keys(shape), settings: [] };
  objects.push(object);
  for (const [key, child] of Object.entries(shape)) {
    const childPath = path === '' ? key : `${path}.${key}`;
    const nestedPaths = nestedObjects(child, childPath);
    object.settings.push({
      path: childPath,
      parent: path,
      key,
      type: typeOf(child),
      defaultJson: defaultOf(child),
      nested: nestedPaths.length > 0,
      required: isRequired(child),
    });
    for (const [nestedPath, nested] of nestedPaths) walkObject(nested, nestedPath, objects);
  }
}

/** The objects of settings a key holds, under the path their keys are written with. */
function nestedObjects(node: SchemaNode, path: string): [string, SchemaNode][] {
  const def = node._zod.def;
  switch (def.type) {
    case 'default':
    case 'optional':
    case 'nullable':
      return def.innerType === undefined ? [] : nestedObjects(def.innerType, path);
    case 'pipe':
      return nestedObjects(meaningfulSide(def), path);
    case 'union':
      return (def.options ?? []).flatMap((option) => nestedObjects(option, path));
    case 'array':
      return def.element === undefined ? [] : nestedObjects(def.element, `${path}[]`);
    case 'record':
      return def.valueType === undefined ? [] : nestedObjects(def.valueType, `${path}.<name>`);
    case 'object':
      // An object that keeps unknown keys (a JWK) is a value, not settings.
      return isOpenObject(def) ? [] : [[path, node]];
    default:
      return [];
  }
}

const isOpenObject = (def: Definition): boolean => def.catchall !== undefined && def.catchall._zod.def.type !== 'never';

/** A preprocess is a pipe from a transform; a transform after a schema is a pipe into one. */
function meaningfulSide(def: Definition): SchemaNode {
  const input = def.in as SchemaNode;
  const output = def.out as SchemaNode;
  return input._zod.def.type === 'transform' ? output : input;
}

function typeOf(node: SchemaNode): string {
  const def = node._zod.def;
  switch (def.type) {
    case 'default':
    case 'optional':
    case 'nullable':
      return typeOf(def.innerType as SchemaNode);
    case 'pipe':
      return typeOf(meaningfulSide(def));
    case 'union': {
      const options = def.options ?? [];
      // booleanish: true/false, or their spellings in an environment variable.
      if (options.some((option) => option._zod.def.type === 'boolean') && options.every((option) => ['boolean', 'enum'].includes(option._zod.def.type))) return 'boolean';
      return [...new Set(options.map(typeOf))].join(' \\| ');
    }
    case 'string':
      return node.format === 'url' ? 'URL' : 'string';
    case 'number':
      return numberType(node);
    case 'boolean':
      return 'boolean';
    case 'enum':
      return Object.values(def.entries ?? {}).map((value) => JSON.stringify(value)).join(' \\| ');
    case 'literal':
      return (def.values ?? []).map((value) => JSON.stringify(value)).join(' \\| ');
    case 'array':
      return `list of ${typeOf(def.element as SchemaNode)}`;
    case 'record':
      return `map of name → ${typeOf(def.valueType as SchemaNode)}`;
    case 'object':
      return isOpenObject(def) ? 'JSON object' : 'object';
    case 'lazy':
      return 'JSON';
    default:
      return def.type;
  }
}

function numberType(node: SchemaNode): string {
  const base = node.isInt === true ? 'integer' : 'number';
  const bound = (value: number | null | undefined): number | undefined =>
    value === null || value === undefined || !Number.isFinite(value) || Math.abs(value) >= Number.MAX_SAFE_INTEGER ? undefined : value;
  const min = bound(node.minValue);
  const max = bound(node.maxValue);
  if (min !== undefined && max !== undefined) return `${base} ${min}–${max}`;
  if (min !== undefined) return `${base} ≥ ${min}`;
  if (max !== undefined) return `${base} ≤ ${max}`;
  return base;
}

function isRequired(node: SchemaNode): boolean {
  const def = node._zod.def;
  if (def.type === 'default' || def.type === 'optional') return false;
  return def.type === 'pipe' ? isRequired(meaningfulSide(def)) : true;
}

function defaultOf(node: SchemaNode): string | undefined {
  const def = node._zod.def;
  if (def.type === 'default') {
    const value = def.defaultValue;
    // An object's default is its keys' defaults, listed with them (an empty map is a value).
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0) return undefined;
    return JSON.stringify(value);
  }
  if (def.type === 'pipe') return defaultOf(meaningfulSide(def));
  return undefined;
}
