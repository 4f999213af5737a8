// A minimal A2A 1.0 agent built with the official SDK (@a2a-js/sdk, with express), to run
// behind the gateway: "Weather Desk" answers "weather <city>" with a forecast artifact.
//   PORT=4100 node examples/sdk-agent/agent.mjs     (PORT=0: any free port, printed)
// The gateway in front of it: examples/sdk-agent/gateway.yaml (the a2a adapter).
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';

const HOST = process.env.HOST ?? '127.0.0.1';
const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const status = (state, message) => ({ state, message, timestamp: new Date().toISOString() });

/** One task per message: submitted, the forecast as an artifact, completed. */
const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId, userMessage } = ctx;
    const asked = userMessage.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join(' ').trim();
    const city = asked.replace(/^weather\s*/i, '') || 'here';
    if (ctx.task === undefined) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [userMessage], metadata: undefined }));
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: 'forecast', name: 'forecast', description: '', parts: [text(`Sunny in ${city}, 21 °C.`)], metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    const done = { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [text('Forecast ready.')], metadata: undefined, extensions: [], referenceTaskIds: [] };
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED, done), metadata: undefined }));
  },
  async cancelTask() {
    // Every task completes at once: nothing is ever running to cancel.
  },
};

function cardAt(base) {
  return {
    name: 'Weather Desk',
    description: 'Forecasts for any city: send "weather <city>".',
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'forecast', name: 'Forecast', description: 'The weather in a city.', tags: ['weather'], examples: ['weather Paris'], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}

// The card names the port, known once listening (PORT=0); the routes are mounted then, before
// the line that tells the port is printed.
const app = express();
const server = app.listen(Number(process.env.PORT ?? 4100), HOST, () => {
  const base = `http://${HOST}:${server.address().port}`;
  const card = cardAt(base);
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`Weather Desk listening on ${base}`);
});
