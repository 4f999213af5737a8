// zod schemas for every request the gateway accepts. A failure becomes InvalidParams with one
// field violation per problem (path in the request, what is wrong), never a partial write.
import { z } from 'zod';
import { invalidParams, type FieldViolation } from './errors.ts';
import { TASK_STATES, type JsonObject } from './types.ts';

const jsonObject = z.record(z.string(), z.json()) as unknown as z.ZodType<JsonObject>;

/**
 * The key under which the gateway reports what it did (outcome, cancellation, a sub-agent's
 * link to its coordinator). A caller's metadata may not carry it: what only the gateway may say
 * must not be forgeable by a request.
 */
export const RESERVED_METADATA_KEY = 'a2aGateway';

/** Caller metadata: any JSON object without the gateway's reserved key. */
const callerMetadata = jsonObject.refine((value) => !Object.hasOwn(value, RESERVED_METADATA_KEY), {
  message: `"${RESERVED_METADATA_KEY}" is reserved for what the gateway reports; put your metadata under another key`,
});
const id = (what: string) => z.string().min(1, `${what} must not be empty`).max(256, `${what} is longer than 256 characters`);

export const partSchema = z
  .object({
    text: z.string().optional(),
    raw: z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'raw must be base64').optional(),
    url: z.string().url().optional(),
    data: z.json().optional(),
    metadata: jsonObject.optional(),
    filename: z.string().optional(),
    mediaType: z.string().optional(),
  })
  .superRefine((part, ctx) => {
    const set = (['text', 'raw', 'url', 'data'] as const).filter((k) => part[k] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          set.length === 0
            ? 'a part needs exactly one of text, raw, url or data'
            : `a part holds exactly one of text, raw, url or data, not ${set.join(' and ')}`,
      });
    }
  });

export const messageSchema = z.object({
  messageId: id('messageId'),
  contextId: id('contextId').optional(),
  taskId: id('taskId').optional(),
  role: z.literal('ROLE_USER', { message: 'role must be ROLE_USER for messages sent to the agent' }),
  parts: z.array(partSchema).min(1, 'at least one part is required'),
  metadata: callerMetadata.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});

const historyLength = z.number().int('historyLength must be an integer').min(0, 'historyLength must be 0 or more');
const tenant = z.string().max(128).optional();
const taskState = z.enum(TASK_STATES, { message: `must be one of ${TASK_STATES.join(', ')}` });

/** A value sent as (part of) an HTTP header of every webhook: no CR, LF or other control characters. */
const headerValue = (what: string) =>
  z
    .string()
    .max(4096, `${what} is longer than 4096 characters`)
    .regex(/^[^\x00-\x1f\x7f]*$/, `${what} must not contain control characters (CR, LF, …): it is sent in an HTTP header`);

export const pushConfigSchema = z.object({
  tenant,
  id: z
    .string()
    .regex(/^[A-Za-z0-9_.~-]{1,128}$/, 'id must be 1 to 128 letters, digits, "_", ".", "~" or "-" (a UUID fits)')
    .optional(),
  taskId: z.string().optional(),
  url: z.string().url('url must be an absolute http(s) URL'),
  token: headerValue('token').optional(),
  authentication: z
    .object({
      scheme: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/, 'scheme must be an HTTP authentication scheme name such as Bearer or Basic'),
      credentials: headerValue('credentials').optional(),
    })
    .optional(),
});

export const sendMessageRequestSchema = z.object({
  tenant,
  message: messageSchema,
  configuration: z
    .object({
      acceptedOutputModes: z.array(z.string()).optional(),
      taskPushNotificationConfig: pushConfigSchema.optional(),
      historyLength: historyLength.optional(),
      returnImmediately: z.boolean().optional(),
    })
    .optional(),
  metadata: callerMetadata.optional(),
});

export const getTaskRequestSchema = z.object({ tenant, id: id('id'), historyLength: historyLength.optional() });

export const listTasksRequestSchema = z.object({
  tenant,
  contextId: z.string().optional(),
  status: taskState.optional(),
  pageSize: z.number().int().min(1, 'pageSize must be between 1 and 100').max(100, 'pageSize must be between 1 and 100').optional(),
  pageToken: z.string().optional(),
  historyLength: historyLength.optional(),
  statusTimestampAfter: z.string().datetime({ offset: false, message: 'must be an ISO 8601 UTC timestamp like 2025-01-01T00:00:00Z' }).optional(),
  includeArtifacts: z.boolean().optional(),
});

export const cancelTaskRequestSchema = z.object({ tenant, id: id('id'), metadata: jsonObject.optional() });
export const subscribeRequestSchema = z.object({ tenant, id: id('id') });
/** Gateway extension: a coordinator's assignments (the sub-agent tasks it delegated to). */
export const listAssignmentsRequestSchema = z.object({ tenant, id: id('id') });
export const getPushConfigRequestSchema = z.object({ tenant, taskId: id('taskId'), id: id('id') });
export const listPushConfigsRequestSchema = z.object({
  tenant,
  taskId: id('taskId'),
  pageSize: z.number().int().min(0).optional(),
  pageToken: z.string().optional(),
});
export const createPushConfigRequestSchema = pushConfigSchema.extend({ taskId: id('taskId') });
/** Gateway extension (operators): dead-lettered push deliveries. */
export const listDeadLettersRequestSchema = z.object({
  tenant,
  taskId: id('taskId').optional(),
  pageSize: z.number().int().min(1, 'pageSize must be between 1 and 1000').max(1000, 'pageSize must be between 1 and 1000').optional(),
});
export const replayDeadLetterRequestSchema = z.object({ tenant, id: id('id') });
const utcTimestamp = z.string().datetime({ offset: false, message: 'must be an ISO 8601 UTC timestamp like 2025-01-01T00:00:00Z' });
/** Operators (a2a:admin): every owner's tasks, most recently changed first (src/operator/operator-tasks.ts). */
export const operatorListTasksRequestSchema = z.object({
  tenant,
  agent: id('agent').optional(),
  /** The owners' tenant; '' is the default tenant. */
  ownerTenant: z.string().max(128).optional(),
  /** The owner's principal (subject). */
  owner: id('owner').optional(),
  state: taskState.optional(),
  contextId: id('contextId').optional(),
  changedAfter: utcTimestamp.optional(),
  changedBefore: utcTimestamp.optional(),
  pageSize: z.number().int().min(1, 'pageSize must be between 1 and 100').max(100, 'pageSize must be between 1 and 100').optional(),
  pageToken: z.string().max(512).optional(),
});
export const operatorTaskRequestSchema = z.object({ tenant, id: id('id') });
export const operatorWatchRequestSchema = z.object({ tenant });
/** Gateway extension: schedules (src/schedules). */
export const createScheduleRequestSchema = z
  .object({
    tenant,
    name: z.string().max(128, 'name is longer than 128 characters').optional(),
    message: z.object({
      parts: z.array(partSchema).min(1, 'at least one part is required'),
      contextId: id('contextId').optional(),
      metadata: jsonObject.optional(),
      extensions: z.array(z.string()).optional(),
      role: z.literal('ROLE_USER', { message: 'role must be ROLE_USER for messages sent to the agent' }).optional(),
    }),
    at: z.string().datetime({ offset: true, message: 'must be an ISO 8601 timestamp like 2026-01-01T09:00:00Z' }).optional(),
    cron: z.string().min(1).max(256, 'cron is longer than 256 characters').optional(),
    timeZone: z.string().min(1).max(64).optional(),
    lateness: z
      .object({
        policy: z.enum(['skip', 'run-once', 'catch-up'], { message: 'must be skip, run-once or catch-up' }),
        catchUpMax: z.number().int().min(1, 'catchUpMax must be at least 1').optional(),
      })
      .optional(),
    metadata: jsonObject.optional(),
    /** A push config (its url, token, authentication) put on every task the schedule starts. */
    taskPushNotificationConfig: pushConfigSchema.pick({ url: true, token: true, authentication: true }).optional(),
  })
  .superRefine((request, ctx) => {
    if ((request.at === undefined) === (request.cron === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['at'], message: 'give exactly one of at (one firing) and cron (repeating)' });
    }
  });
export const scheduleIdRequestSchema = z.object({ tenant, id: id('id') });
export const listSchedulesRequestSchema = z.object({
  tenant,
  pageSize: z.number().int().min(1, 'pageSize must be between 1 and 100').max(100, 'pageSize must be between 1 and 100').optional(),
  pageToken: z.string().regex(/^\d{1,9}$/, 'is not a token this gateway issued; use nextPageToken from the previous page').optional(),
});
export const extendedCardRequestSchema = z.object({ tenant });

/** zod issues → spec field violations ("message.parts[0]" style paths). */
export function toViolations(error: z.ZodError, prefix = ''): FieldViolation[] {
  return error.issues.map((issue) => {
    const path = issue.path
      .map((segment, index) => (typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`))
      .join('');
    const field = prefix === '' ? path : path === '' ? prefix : `${prefix}.${path}`;
    return { field: field || '(request)', description: issue.message };
  });
}

/** Parses params with a schema or throws InvalidParams naming every failing field. */
export function parseParams<T>(schema: z.ZodType<T>, params: unknown, prefix = ''): T {
  let result: ReturnType<typeof schema.safeParse>;
  try {
    result = schema.safeParse(params ?? {});
  } catch (error) {
    // zod validates recursively: a hostile, deeply nested value (metadata, data parts)
    // overflows the stack. That is bad input (-32602 / 400), not an internal error.
    if (error instanceof RangeError) {
      throw invalidParams([{ field: prefix || '(request)', description: 'is nested too deeply' }]);
    }
    throw error;
  }
  if (!result.success) throw invalidParams(toViolations(result.error, prefix));
  return result.data;
}

