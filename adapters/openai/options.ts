// The openai adapter's options (adapterOptions / A2A_ADAPTER_OPTIONS), checked once at load
// time: a misspelt or out-of-range option stops the start with one line naming it, instead of
// surfacing as a failed model call in the first turn.
import { z } from 'zod';

export const DEFAULT_API_KEY_ENV = 'OPENAI_API_KEY';

const positiveInt = z.number().int('must be a whole number').positive('must be greater than 0');
const nonNegativeInt = z.number().int('must be a whole number').min(0, 'must be 0 or more');

export const openAIOptionsSchema = z
  .strictObject({
    /** The API's base URL, up to and including `/v1` (OpenAI, vLLM, Ollama, LiteLLM …). Required: prompts go where it points. */
    baseURL: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL such as http://127.0.0.1:11434/v1' }),
    /** The model name the server knows (`gpt-4o-mini`, `llama3`, …); also named on the agent card. */
    model: z.string().min(1, 'must name the model'),
    /** Name of the environment variable holding the API key (default OPENAI_API_KEY; unset = no Authorization header). */
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
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
  });

export type OpenAIAdapterOptions = z.output<typeof openAIOptionsSchema>;
/** What a configuration may write (defaults filled in by parseOpenAIOptions). */
export type OpenAIAdapterOptionsInput = z.input<typeof openAIOptionsSchema>;

/** Checks the options; throws one line naming every bad option. */
export function parseOpenAIOptions(raw: unknown): OpenAIAdapterOptions {
  const result = openAIOptionsSchema.safeParse(raw ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `unknown option${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    const name = issue.path.map(String).join('.');
    if (name === '') return issue.message;
    if (issue.code === 'invalid_type' && issue.input === undefined) return `option ${name} is required`;
    return `option ${name} ${issue.message}`;
  });
  throw new Error(`openai adapter: ${problems.join('; ')} (see docs/openai-adapter.md)`);
}
