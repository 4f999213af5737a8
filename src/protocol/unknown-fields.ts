// Fields of a request that A2A 1.0 does not define. They used to be dropped silently, so a 0.3
// client's `pushNotificationConfig` in a 1.0 SendMessage, or a typo, just turned a feature off.
// Each request with some is logged (one WARN line: the field paths, the method, and the 1.0 name
// to use for a known 0.3 name, or the closest field for a typo); with
// protocol.strictRequestFields it is refused with InvalidParams naming them. The 0.3 layer
// (src/compat/v0_3) hands the operations only 1.0 fields, so 0.3 clients never meet this.
import type { z } from 'zod';
import type { Logger } from '../logging/logger.ts';
import { closestName } from '../validation/closest-name.ts';
import { elementOf, fieldsOf } from '../validation/zod-shape.ts';
import { invalidParams, type FieldViolation } from './errors.ts';

/** What the bindings do with unknown request fields (setting protocol.strictRequestFields). */
export interface RequestFieldPolicy {
  /** Refuse the request (InvalidParams) instead of ignoring the fields. */
  strict: boolean;
  logger: Logger;
}

export interface UnknownField {
  /** Where in the request, as field violations name it ("configuration.pushNotificationConfig"). */
  path: string;
  /** What to send instead: the 1.0 name of a 0.3 field, or the closest field of a typo. */
  instead?: string;
}

/**
 * A2A 0.3 names a 1.0 request may still carry, by the object they appear in (the schema's
 * field name holding it, '' for the request itself, '*' anywhere) → what A2A 1.0 calls them.
 */
const LEGACY_NAMES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  configuration: {
    pushNotificationConfig: 'configuration.taskPushNotificationConfig',
    blocking: 'configuration.returnImmediately (inverted: blocking false is returnImmediately true)',
  },
  authentication: { schemes: 'authentication.scheme (one scheme name)' },
  '': {
    pushNotificationConfig: 'the config\'s own fields (url, token, authentication) at the top level of the request',
    pushNotificationConfigId: 'id',
  },
  parts: {
    kind: 'nothing: a 1.0 part is told apart by which of text, raw, url or data it holds',
    file: 'raw (base64 bytes) or url, with mediaType and filename beside them',
    mimeType: 'mediaType',
  },
  '*': { kind: 'nothing: A2A 1.0 has no kind discriminator' },
};

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function insteadOf(name: string, holder: string, known: readonly string[], prefix: string): string | undefined {
  const legacy = LEGACY_NAMES[holder]?.[name] ?? LEGACY_NAMES['*']?.[name];
  if (legacy !== undefined) return legacy;
  const closest = closestName(name, known);
  return closest === undefined ? undefined : `${prefix}${closest}`;
}

/** Every field of `value` the schema does not define, in request order; free-form values (metadata, data) are not looked into. */
export function unknownFieldsOf(schema: z.ZodType, value: unknown, path = '', holder = ''): UnknownField[] {
  const found: UnknownField[] = [];
  if (Array.isArray(value)) {
    const element = elementOf(schema);
    if (element !== undefined) value.forEach((item, index) => found.push(...unknownFieldsOf(element, item, `${path}[${index}]`, holder)));
    return found;
  }
  if (!isObject(value)) return found;
  const fields = fieldsOf(schema);
  if (fields === undefined) return found;
  const known = Object.keys(fields);
  const prefix = path === '' ? '' : `${path}.`;
  for (const [name, item] of Object.entries(value)) {
    const field = fields[name];
    if (field === undefined) {
      const instead = insteadOf(name, holder, known, prefix);
      found.push({ path: `${prefix}${name}`, ...(instead === undefined ? {} : { instead }) });
    } else {
      found.push(...unknownFieldsOf(field, item, `${prefix}${name}`, name));
    }
  }
  return found;
}

/** Logs the request's unknown fields (with `context`, e.g. the agent), and refuses the request when the policy is strict. */
export function checkRequestFields(method: string, schema: z.ZodType, params: unknown, policy: RequestFieldPolicy, context: Record<string, string> = {}): void {
  const unknown = unknownFieldsOf(schema, params);
  if (unknown.length === 0) return;
  const useInstead = Object.fromEntries(unknown.flatMap((field) => (field.instead === undefined ? [] : [[field.path, field.instead]])));
  policy.logger.warn(
    policy.strict ? 'request refused: it has fields A2A 1.0 does not define (protocol.strictRequestFields)' : 'request has fields A2A 1.0 does not define; they are ignored',
    { ...context, method, fields: unknown.map((field) => field.path), ...(Object.keys(useInstead).length === 0 ? {} : { useInstead }) },
  );
  if (!policy.strict) return;
  const violations: FieldViolation[] = unknown.map((field) => ({
    field: field.path,
    description: `is not a field of the ${method} request in A2A 1.0${field.instead === undefined ? '' : `; use ${field.instead}`} (refused because protocol.strictRequestFields is on)`,
  }));
  throw invalidParams(violations);
}
