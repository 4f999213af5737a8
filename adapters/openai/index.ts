// The openai adapter: the agent behind the gateway is a chat model served over the OpenAI
// chat-completions API (OpenAI itself, vLLM, Ollama, LiteLLM, …), called with the official
// `openai` client. Options are checked and the key's source resolved at load time; every turn
// builds its conversation from the task (and its context), so any worker can run any turn.
import OpenAI from 'openai';
import type { AgentSkill, JsonObject } from '../../src/protocol/types.ts';
import type { Adapter, AdapterContext, AdapterEnvironment, TurnOutcome } from '../types.ts';
import { boundedFetch, DEFAULT_ADAPTER_ENVIRONMENT } from '../bounded-response.ts';
import { isLoopbackOrHttps, pinCallerHeader } from '../caller-header-fetch.ts';
import { resolveApiKey } from './api-key.ts';
import { runChatTurn } from './chat-turn.ts';
import { parseOpenAIOptions, type OpenAIAdapterOptions } from './options.ts';

export const OPENAI_ADAPTER_VERSION = '1.0.0';
const CHAT_SKILL_ID = 'chat';

/** The card's one skill: a conversation with the configured model (the server's address stays private). */
export function chatSkill(options: Pick<OpenAIAdapterOptions, 'model' | 'askUser'>): AgentSkill {
  return {
    id: CHAT_SKILL_ID,
    name: `Chat with ${options.model}`,
    description:
      `Answers in a conversation using the model "${options.model}". It sees this task's earlier messages and ` +
      `those of earlier tasks in the same context; the reply streams into an artifact.` +
      (options.askUser ? ' When it needs more from you it asks, and the task waits for your answer (input required).' : ''),
    tags: ['chat', 'llm', 'openai-compatible'],
    examples: ['Summarize the following text in three sentences: …', 'What should I ask a landlord before signing a lease?'],
    inputModes: ['text/plain', 'application/json'],
    outputModes: ['text/plain'],
  };
}

/** Builds the adapter from raw adapterOptions; throws one line naming a bad option. */
export function createOpenAIAdapter(raw: JsonObject, environment: AdapterEnvironment = DEFAULT_ADAPTER_ENVIRONMENT): Adapter {
  const options = parseOpenAIOptions(raw);
  const keys = resolveApiKey(options);
  // The caller token's audience: the model server's origin (baseURL's), and only there.
  const caller = environment.callerIdentity === undefined ? undefined : { tokens: environment.callerIdentity, origin: new URL(options.baseURL).origin };
  if (caller !== undefined && !isLoopbackOrHttps(new URL(options.baseURL))) {
    throw new Error(`callerIdentity is on, but baseURL ${caller.origin} is plain http: the caller token would travel in the clear; use https (plain http is allowed to loopback addresses only)`);
  }
  const bounded = boundedFetch(environment.backendLimits);
  const client = new OpenAI({
    baseURL: options.baseURL,
    // The client insists on a credential; without a key its Authorization header is removed
    // below, which is what Ollama and other key-less servers expect.
    apiKey: keys.apiKey ?? 'no-key',
    ...(keys.apiKey === undefined ? { defaultHeaders: { Authorization: null } } : {}),
    // Only what the options say: no organization, project or admin key picked up from OPENAI_* variables.
    organization: null,
    project: null,
    adminAPIKey: null,
    // Retries are the adapter's (retry-policy.ts): its waits end when the turn is canceled.
    maxRetries: 0,
    timeout: options.requestTimeoutMs,
    // Every answer and stream of the model server is read within the agent's backendLimits.
    fetch: caller === undefined ? bounded : pinCallerHeader(bounded, caller.tokens.header, caller.origin),
    // The client's own log lines would go to the console, outside the gateway's logger.
    logLevel: 'off',
  });
  const skill = chatSkill(options);
  return {
    name: 'openai',
    version: OPENAI_ADAPTER_VERSION,
    skills: [skill],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    async run(ctx: AdapterContext): Promise<TurnOutcome> {
      if (ctx.requestedSkill !== undefined && ctx.requestedSkill !== CHAT_SKILL_ID) {
        return { state: 'rejected', message: `unknown skill "${ctx.requestedSkill}"; this agent has one skill: ${CHAT_SKILL_ID}` };
      }
      return runChatTurn(ctx, { client, options, keys, ...(caller === undefined ? {} : { caller }) });
    },
  };
}
