// What an adapter hands the runtime, checked at the boundary. Adapters are user code (often
// plain JavaScript): a typo in an outcome or a malformed part must fail the turn once, with a
// reason naming the adapter and the field, never leave a task without a state or be mistaken
// for a lost worker and retried.
import { z } from 'zod';
import type { ArtifactChunk, TurnOutcome, TurnUsage } from '../../adapters/types.ts';
import { partSchema, toViolations } from '../protocol/schemas.ts';
import type { JsonObject, Part } from '../protocol/types.ts';

/** The adapter broke its contract: the turn fails with this reason (and is not retried). */
export class AdapterContractError extends Error {
  constructor(
    readonly adapter: string,
    readonly call: string,
    readonly problems: string[],
  ) {
    super(`The ${adapter} adapter broke the adapter contract in ${call}: ${problems.join('; ')}.`);
    this.name = 'AdapterContractError';
  }
}

const jsonObject = z.record(z.string(), z.json()) as unknown as z.ZodType<JsonObject>;
const parts = z.array(partSchema).min(1, 'needs at least one part');
/** Text, or parts (data parts included) for questions and final messages that carry structure. */
const messageContent = z.union([z.string(), parts], { message: 'must be a string or a non-empty array of parts' });

const verificationSchema = z.strictObject({
  verified: z.boolean(),
  method: z.string().min(1, 'must say how the result was checked'),
  evidence: jsonObject.optional(),
});

const STATES = ['completed', 'message', 'input-required', 'auth-required', 'failed', 'rejected'] as const;

const outcomeSchema = z.discriminatedUnion(
  'state',
  [
    z.strictObject({ state: z.literal('completed'), message: messageContent.optional(), verification: verificationSchema.optional() }),
    z.strictObject({ state: z.literal('message'), message: messageContent }),
    z.strictObject({ state: z.literal('input-required'), message: messageContent }),
    z.strictObject({ state: z.literal('auth-required'), message: messageContent }),
    z.strictObject({ state: z.literal('failed'), message: messageContent }),
    z.strictObject({ state: z.literal('rejected'), message: messageContent }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? `state must be one of ${STATES.join(', ')}` : undefined) },
);

const chunkSchema = z.strictObject({
  artifactId: z.string().min(1, 'must not be empty').max(256, 'is longer than 256 characters'),
  name: z.string().optional(),
  description: z.string().optional(),
  parts,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
  metadata: jsonObject.optional(),
});

const statusSchema = z.strictObject({ text: z.string({ message: 'must be a string' }), metadata: jsonObject.optional() });

const count = z.number().int('must be a whole number').min(0, 'must be 0 or more');
const usageSchema = z.strictObject({ model: z.string().optional(), inputTokens: count, outputTokens: count });

function check<T>(schema: z.ZodType<T>, value: unknown, adapter: string, call: string, prefix: string): T {
  let result: ReturnType<typeof schema.safeParse>;
  try {
    result = schema.safeParse(value);
  } catch (error) {
    // A cyclic or absurdly deep value overflows zod's recursion: still the adapter's mistake.
    if (error instanceof RangeError) throw new AdapterContractError(adapter, call, [`${prefix || 'the value'} is nested too deeply (or cyclic)`]);
    throw error;
  }
  if (result.success) return result.data;
  const problems = toViolations(result.error, prefix).map((v) => `${v.field} ${v.description}${receivedOf(value, v.field, prefix)}`);
  throw new AdapterContractError(adapter, call, problems);
}

/** " (got "complete")" for a wrong scalar at a top-level field, so the typo is visible. */
function receivedOf(value: unknown, field: string, prefix: string): string {
  const key = prefix === '' ? field : field.slice(prefix.length + 1);
  if (value === null || typeof value !== 'object' || key.includes('.') || key.includes('[')) return '';
  const got = (value as Record<string, unknown>)[key];
  return typeof got === 'string' || typeof got === 'number' || typeof got === 'boolean' ? ` (got ${JSON.stringify(got)})` : '';
}

/**
 * `declares.directMessages`: whether the adapter declared it may answer with a direct Message;
 * a `message` outcome from one that did not is a broken contract (streams of its tasks were
 * never held back for one).
 */
export function checkOutcome(value: unknown, adapter: string, declares: { directMessages?: boolean } = {}): TurnOutcome {
  if (value === undefined || value === null) {
    throw new AdapterContractError(adapter, 'run()', [`it resolved with ${String(value)} instead of a turn outcome such as { state: 'completed' } (did run() forget to return?)`]);
  }
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new AdapterContractError(adapter, 'run()', [`it resolved with ${Array.isArray(value) ? 'an array' : typeof value} instead of a turn outcome object`]);
  }
  const outcome = check(outcomeSchema, value, adapter, 'the outcome returned by run()', 'outcome') as TurnOutcome;
  if (outcome.state === 'message' && declares.directMessages !== true) {
    throw new AdapterContractError(adapter, 'the outcome returned by run()', [
      "outcome.state is 'message' (a direct Message), but the adapter does not declare directMessages: true",
    ]);
  }
  return outcome;
}

export function checkArtifactChunk(value: unknown, adapter: string): ArtifactChunk {
  return check(chunkSchema, value, adapter, 'ctx.emitArtifact()', 'chunk');
}

export function checkStatus(text: unknown, metadata: unknown, adapter: string): { text: string; metadata?: JsonObject | undefined } {
  return check(statusSchema, { text, metadata }, adapter, 'ctx.emitStatus()', '');
}

export function checkUsage(value: unknown, adapter: string): TurnUsage {
  return check(usageSchema, value, adapter, 'ctx.recordUsage()', 'usage');
}

/** An outcome's or question's message content as parts. */
export function partsOf(content: string | Part[]): Part[] {
  return typeof content === 'string' ? [{ text: content }] : content;
}

const MAX_STATE_KEY = 128;
const MAX_STATE_BYTES = 64 * 1024;

export function checkStateKey(key: unknown, adapter: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_STATE_KEY) {
    throw new AdapterContractError(adapter, 'ctx.adapterState', [`a key must be a string of 1 to ${MAX_STATE_KEY} characters, got ${JSON.stringify(key) ?? String(key)}`]);
  }
  return key;
}

export function checkStateValue(key: unknown, value: unknown, adapter: string): void {
  checkStateKey(key, adapter);
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new AdapterContractError(adapter, 'ctx.adapterState.set()', [`the value of "${String(key)}" is not JSON (${(error as Error).message})`]);
  }
  if (json === undefined) throw new AdapterContractError(adapter, 'ctx.adapterState.set()', [`the value of "${String(key)}" is not JSON (use null to clear it)`]);
  if (Buffer.byteLength(json) > MAX_STATE_BYTES) {
    throw new AdapterContractError(adapter, 'ctx.adapterState.set()', [`the value of "${String(key)}" is ${Buffer.byteLength(json)} bytes of JSON, more than ${MAX_STATE_BYTES}`]);
  }
}
