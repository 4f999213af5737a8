// The openai adapter's options (adapterOptions / A2A_ADAPTER_OPTIONS), checked once at load
// time: a misspelt or out-of-range option stops the start with one line naming it, instead of
// surfacing as a failed model call in the first turn.
import { z } from 'zod';
import { modelPricesSchema } from '../../src/consumers/consumer-spec.ts';

export const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';

const positiveInt = z.number().int('must be a whole number').positive('must be greater than 0');
const nonNegativeInt = z.number().int('must be a whole number').min(0, 'must be 0 or more');
const httpURL = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL such as http://127.0.0.1:11434/v1' });
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** Most endpoints one agent may list: each is a client and a health record in every worker. */
export const MAX_ENDPOINTS = 16;

/** One of several model servers the agent may call (see endpoint-router.ts for how one is chosen). */
export const endpointSchema = z
  .strictObject({
    /** How logs and metrics name it (default: its baseURL's origin). */
    name: z.string().regex(/^[A-Za-z0-9._:/-]{1,64}$/, 'must be 1 to 64 letters, digits or . _ : / -').optional(),
    baseURL: httpURL,
    /** The model name this server knows, when it differs from the agent's `model`. */
    model: z.string().min(1, 'must name the model').optional(),
    /** This endpoint's own key source; none = no Authorization header (the agent's key is never sent elsewhere). */
    apiKeyEnv: envName.optional(),
    apiKeyFile: z.string().min(1, 'must be a file path').optional(),
    /** Smaller is tried first; default: the endpoint's place in the list (1, 2, 3 …). */
    priority: nonNegativeInt.max(1000, 'must be at most 1000').optional(),
    /** Share of the requests among the healthy endpoints of the same priority. */
    weight: positiveInt.max(1000, 'must be at most 1000').default(1),
  })
  .refine((endpoint) => !(endpoint.apiKeyEnv !== undefined && endpoint.apiKeyFile !== undefined), {
    message: 'apiKeyEnv and apiKeyFile are both set; set one',
  });

export type EndpointOptions = z.output<typeof endpointSchema>;

export const openAIOptionsSchema = z
  .strictObject({
    /** The API's base URL, up to and including `/v1` (OpenAI, vLLM, Ollama, LiteLLM …). Required: prompts go where it points. */
    baseURL: httpURL.optional(),
    /** Several model servers instead of baseURL: fallback before the first token, weighted balancing, cool-down. */
    endpoints: z.array(endpointSchema).min(1, 'must list at least one endpoint').max(MAX_ENDPOINTS, `must list at most ${MAX_ENDPOINTS} endpoints`).optional(),
    /** Consecutive failures after which an endpoint is cooled down (default 3). */
    endpointFailures: positiveInt.max(100, 'must be at most 100').optional(),
    /** How long a cooled-down endpoint is left out before one trial request probes it (default 30000). */
    endpointCoolDownMs: positiveInt.max(3_600_000, 'must be at most 3600000 (an hour)').optional(),
    /** The model name the server knows (`gpt-4o-mini`, `llama3`, …); also named on the agent card. */
    model: z.string().min(1, 'must name the model'),
    /** Name of the environment variable holding the API key (default OPENAI_API_KEY; unset = no Authorization header). */
    apiKeyEnv: envName.optional(),
    /** A file holding the API key (read for every request, so a rotated key needs no restart). */
    apiKeyFile: z.string().min(1, 'must be a file path').optional(),
    /** Sent first, as the system message of every request. */
    systemPrompt: z.string().optional(),
    temperature: z.number().min(0, 'must be between 0 and 2').max(2, 'must be between 0 and 2').optional(),
    /** Most tokens the model may write per reply (sent as `maxTokensField`). */
    maxTokens: positiveInt.optional(),
    /** `max_tokens` (vLLM, Ollama, LiteLLM, older OpenAI models) or `max_completion_tokens` (newer OpenAI models). */
    maxTokensField: z.enum(['max_tokens', 'max_completion_tokens']).default('max_tokens'),
    /** Stream the reply (SSE) into the artifact as it is written; false = one request, one chunk. */
    stream: z.boolean().default(true),
    /** Ask for token usage at the end of a stream (`stream_options.include_usage`); turn off for servers that refuse it. */
    streamUsage: z.boolean().default(true),
    /** Prices per model name, per million input and output tokens: what consumers' spend is counted in (docs/consumers.md). */
    prices: modelPricesSchema.optional(),
    /** Offer the model the `ask_user(question)` tool; calling it ends the turn in INPUT_REQUIRED. */
    askUser: z.boolean().default(true),
    /** Earlier tasks of the same context whose messages are sent (0 = this task only). */
    contextTasks: nonNegativeInt.max(100, 'must be at most 100').default(20),
    /** Most messages sent per request besides the system prompt; the oldest are dropped first. */
    maxMessages: positiveInt.default(100),
    /** Most characters of message text sent per request besides the system prompt; the oldest messages are dropped first. */
    maxChars: positiveInt.default(200_000),
    /** Retries of one reply after 408/409/429/5xx, a network error, a timeout or a stream cut mid-reply. */
    maxRetries: nonNegativeInt.max(20, 'must be at most 20').default(4),
    /** Longest wait before a retry; a server asking for longer (Retry-After) fails the turn instead. */
    maxRetryDelayMs: positiveInt.default(30_000),
    /** First backoff when the server gives no Retry-After (doubles per retry, with jitter). */
    retryBaseDelayMs: positiveInt.default(500),
    /** How long a request may wait for the response headers (a non-streamed reply: the whole reply). */
    requestTimeoutMs: positiveInt.default(600_000),
    /** A stream that delivers no byte this long is treated as cut and retried (bytes of an unfinished event count). */
    streamIdleTimeoutMs: positiveInt.default(120_000),
  })
  .refine((options) => !(options.apiKeyEnv !== undefined && options.apiKeyFile !== undefined), {
    message: 'options apiKeyEnv and apiKeyFile are both set; set one',
  })
  .refine((options) => options.endpoints === undefined || (options.apiKeyEnv === undefined && options.apiKeyFile === undefined), {
    message: 'options apiKeyEnv and apiKeyFile name the key of baseURL; with endpoints, give each endpoint its own',
  });

export const DEFAULT_ENDPOINT_FAILURES = 3;
export const DEFAULT_ENDPOINT_COOL_DOWN_MS = 30_000;

/** baseURL or endpoints, exactly one: checked on the raw input so it is said even when other options are wrong. */
function whereProblems(raw: unknown): string[] {
  if (typeof raw !== 'object' || raw === null) return [];
  const { baseURL, endpoints } = raw as { baseURL?: unknown; endpoints?: unknown };
  if (baseURL === undefined && endpoints === undefined) return ['option baseURL is required'];
  if (baseURL !== undefined && endpoints !== undefined) return ['options baseURL and endpoints are both set; set one'];
  return [];
}

export type OpenAIAdapterOptions = z.output<typeof openAIOptionsSchema>;
/** What a configuration may write (defaults filled in by parseOpenAIOptions). */
export type OpenAIAdapterOptionsInput = z.input<typeof openAIOptionsSchema>;

/** Checks the options; throws one line naming every bad option. */
export function parseOpenAIOptions(raw: unknown): OpenAIAdapterOptions {
  const result = openAIOptionsSchema.safeParse(raw ?? {});
  const where = whereProblems(raw ?? {});
  if (result.success && where.length === 0) return result.data;
  const problems = [...where, ...(result.success ? [] : result.error.issues)].map((issue) => {
    if (typeof issue === 'string') return issue;
    if (issue.code === 'unrecognized_keys') return `unknown option${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    const name = issue.path.map(String).join('.');
    if (name === '') return issue.message;
    if (issue.code === 'invalid_type' && issue.input === undefined) return `option ${name} is required`;
    return `option ${name} ${issue.message}`;
  });
  throw new Error(`openai adapter: ${problems.join('; ')} (see docs/openai-adapter.md)`);
}
