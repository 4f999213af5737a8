// ProtoJSON parsers accept a field under its proto name (`history_length`) as well as its JSON
// name (`historyLength`): so does the gateway, for every request, instead of silently ignoring
// the proto spelling. Responses stay camelCase. The keys inside free-form values (metadata,
// a data part's data, an extension's params) are the client's own and are left as they are.
import { invalidParams } from './errors.ts';

/** google.protobuf.Struct / Value fields of the A2A messages: whatever they hold is not a field name. */
const FREE_FORM_FIELDS = new Set(['metadata', 'data', 'params']);
const PROTO_NAME = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;

/** `history_length` → `historyLength`; any other name is returned as it is. */
export function jsonNameOf(name: string): string {
  return PROTO_NAME.test(name) ? name.replace(/_([a-z0-9])/g, (_, next: string) => next.toUpperCase()) : name;
}

/**
 * The request with every proto field name replaced by its JSON name. A field given under both
 * names is refused (InvalidParams), as a ProtoJSON parser refuses a field set twice.
 */
export function withJsonNames(value: unknown, path = ''): unknown {
  if (Array.isArray(value)) return value.map((item, index) => withJsonNames(item, `${path}[${index}]`));
  if (value === null || typeof value !== 'object') return value;
  const result: Record<string, unknown> = {};
  const givenAs = new Map<string, string>();
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const name = jsonNameOf(key);
    const field = path === '' ? name : `${path}.${name}`;
    const earlier = givenAs.get(name);
    if (earlier !== undefined) throw invalidParams([{ field, description: `is given twice, as "${earlier}" and as "${key}"; send it once` }]);
    givenAs.set(name, key);
    result[name] = FREE_FORM_FIELDS.has(name) ? item : withJsonNames(item, field);
  }
  return result;
}
