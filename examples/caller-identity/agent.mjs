// An A2A 1.0 agent on the official SDK (@a2a-js/sdk, with express) that trusts the gateway in
// front of it to say who is calling: every A2A request must carry a caller JWT the gateway signed
// (X-A2A-Caller), verified with jose (verify-caller.mjs); anything else gets 401. "Caller Echo"
// answers each message with what the token says: the caller, the actors, the task.
//   GATEWAY_URL=http://127.0.0.1:8080 PORT=4200 node examples/caller-identity/agent.mjs
// The gateway in front of it: examples/caller-identity/gateway.yaml.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { callerVerifier } from './verify-caller.mjs';

const HOST = process.env.HOST ?? '127.0.0.1';
const GATEWAY_URL = process.env.GATEWAY_URL ?? 'http://127.0.0.1:8080';
const HEADER = process.env.CALLER_HEADER ?? 'X-A2A-Caller';
const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const status = (state, message) => ({ state, message, timestamp: new Date().toISOString() });

/** Answers with the verified claims the request's user carries (see userBuilder below). */
const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId, userMessage } = ctx;
    const { sub, act, a2a_task_id, a2a_context_id } = ctx.context.user.claims;
    if (ctx.task === undefined) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [userMessage], metadata: undefined }));
    }
    const said = JSON.stringify({ sub, act, a2a_task_id, a2a_context_id });
    const done = { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [text(said)], metadata: undefined, extensions: [], referenceTaskIds: [] };
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED, done), metadata: undefined }));
  },
  async cancelTask() {},
};

function cardAt(base) {
  return {
    name: 'Caller Echo',
    description: 'Says who the gateway says is calling.',
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'whoami', name: 'Who am I', description: 'The caller, as the gateway vouches for it.', tags: ['identity'], examples: ['who am I?'], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}

const app = express();
const server = app.listen(Number(process.env.PORT ?? 4200), HOST, () => {
  const base = `http://${HOST}:${server.address().port}`;
  const card = cardAt(base);
  // The audience is this agent's own origin: a token minted for another backend is refused here.
  const verify = callerVerifier({ gatewayUrl: GATEWAY_URL, audience: new URL(base).origin });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
  app.use('/a2a/jsonrpc', async (req, res, next) => {
    try {
      req.caller = await verify(req.get(HEADER) ?? '');
      next();
    } catch (error) {
      res.status(401).json({ error: `caller token refused: ${error.code ?? error.message}` });
    }
  });
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const userBuilder = async (req) => ({ isAuthenticated: true, userName: req.caller.sub, claims: req.caller });
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder }));
  console.log(`Caller Echo listening on ${base}`);
});
