// The openai adapter: the agent behind the gateway is a chat model served over the OpenAI
// chat-completions API (OpenAI itself, vLLM, Ollama, LiteLLM, …), called with the official
// `openai` client, at one baseURL or at several endpoints (fallback and balancing). Options are
// checked and the keys' sources resolved at load time; every turn builds its conversation from
// the task (and its context), so any worker can run any turn.
import type { AgentSkill, JsonObject } from '../../src/protocol/types.ts';
import type { Adapter, AdapterContext, AdapterEnvironment, TurnOutcome } from '../types.ts';
import { DEFAULT_ADAPTER_ENVIRONMENT } from '../bounded-response.ts';
import { runChatTurn } from './chat-turn.ts';
import { EndpointRouter } from './endpoint-router.ts';
import { modelEndpoints } from './model-endpoints.ts';
import { DEFAULT_ENDPOINT_COOL_DOWN_MS, DEFAULT_ENDPOINT_FAILURES, parseOpenAIOptions, type OpenAIAdapterOptions } from './options.ts';

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
  // One client per endpoint, each pinned to its origin with its own key (model-endpoints.ts).
  const router = new EndpointRouter(modelEndpoints(options, environment), {
    failureThreshold: options.endpointFailures ?? DEFAULT_ENDPOINT_FAILURES,
    coolDownMs: options.endpointCoolDownMs ?? DEFAULT_ENDPOINT_COOL_DOWN_MS,
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
      return runChatTurn(ctx, { options, router });
    },
  };
}
