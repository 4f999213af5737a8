// Reference A2A 1.0 server for the benchmark, built only from the official @a2a-js/sdk.
//
// It does the same work as the gateway's demo `echo` skill (Task submitted -> WORKING -> artifact
// with the input parts -> COMPLETED) and a `long` path that parks the task in WORKING until it is
// canceled, so the idle-subscriber test has an open task to subscribe to. It runs as its own
// child process (started by bench/run.ts) so that it is measured exactly like the gateway:
// separate event loop, separate RSS, same loopback HTTP path.
//
// Env: BENCH_SDK_PORT (required), BENCH_SDK_HOST (default 127.0.0.1), and the task store's
// (BENCH_SDK_STORE: memory, postgres or sqlite; see bench/sdk-store.ts).

import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard, Message, Part } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type TaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { createSdkStore, parseSdkStore } from './sdk-store.ts';

// The project has no @types/express, and an ambient `declare module 'express'` here would leak
// into the whole project's typecheck. So load express untyped and describe the four calls we make.
interface MiniResponse {
  status(code: number): MiniResponse;
  json(body: unknown): void;
}
interface MiniApp {
  get(path: string, handler: (req: unknown, res: MiniResponse) => void): void;
  use(path: string, handler: unknown): void;
  listen(port: number, host: string): Server;
}
const express = createRequire(import.meta.url)('express') as () => MiniApp;

/** Path of the JSON-RPC endpoint; identical to the gateway's so the load generators share URLs. */
export const SDK_JSONRPC_PATH = '/a2a/jsonrpc';

// Upper bound for a `long` task when nobody cancels it, so a crashed benchmark cannot leave
// a task (and its subscribers) parked forever.
const LONG_TASK_MAX_MS = 60 * 60 * 1000;

function textOf(message: Message): string {
  for (const part of message.parts) {
    if (part.content?.$case === 'text') return part.content.value;
  }
  return '';
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * Echo executor. Every call publishes a Task first, as the SDK requires, then either
 * completes immediately (echo) or waits for cancellation (long).
 */
class EchoExecutor implements AgentExecutor {
  // Parked `long` tasks; cancelTask releases them so execute() can return. The contextId is
  // kept because the CANCELED status event must carry the task's real context.
  private readonly parked = new Map<string, { contextId: string; release: () => void }>();

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    const userMessage = ctx.userMessage;
    const text = textOf(userMessage).trim();

    if (!ctx.task) {
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }),
      );
    }

    // The gateway's runtime reports WORKING when a worker picks the turn up, so its streams carry
    // task, working, artifact, completed; publishing the same four events keeps the SSE work equal.
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );

    if (text.startsWith('long')) {
      await this.parkUntilCanceled(taskId, contextId, text, bus);
      return;
    }

    // Same output as the gateway's demo echo skill (adapters/demo): the input parts unchanged
    // as one artifact, then COMPLETED with a short agent message — so both servers serialize
    // comparable payloads.
    const parts = userMessage.parts.length > 0 ? structuredClone(userMessage.parts) : [textPart('')];
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: 'echo', name: 'echo', description: '', parts, metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_COMPLETED,
          message: agentMessage(taskId, contextId, 'echo complete'),
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const entry = this.parked.get(taskId);
    if (!entry) return;
    this.parked.delete(taskId);
    // The request handler waits for a terminal event on this bus before answering CancelTask,
    // so publish CANCELED here (synchronously) rather than from execute().
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: entry.contextId,
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    entry.release();
  };

  private async parkUntilCanceled(taskId: string, contextId: string, text: string, bus: ExecutionEventBus): Promise<void> {
    const requested = Number.parseInt(text.slice(4).trim(), 10);
    const waitMs = Math.min(Number.isFinite(requested) && requested > 0 ? requested : LONG_TASK_MAX_MS, LONG_TASK_MAX_MS);
    let timer: NodeJS.Timeout | undefined;
    const canceled = await new Promise<boolean>((resolve) => {
      this.parked.set(taskId, { contextId, release: () => resolve(true) });
      timer = setTimeout(() => resolve(false), waitMs);
    });
    clearTimeout(timer);
    if (canceled) return; // cancelTask already published CANCELED
    this.parked.delete(taskId);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
  }
}

function buildCard(host: string, port: number): AgentCard {
  return {
    name: 'SDK echo (benchmark reference)',
    description: 'Official @a2a-js/sdk server doing the same work as the gateway demo echo skill.',
    supportedInterfaces: [
      { url: `http://${host}:${port}${SDK_JSONRPC_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'echo',
        description: 'Echoes the text after "echo"; "long <ms>" stays WORKING until canceled.',
        tags: ['demo'],
        examples: ['echo hello', 'long 100000'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

export function startSdkEchoServer(host: string, port: number, taskStore: TaskStore = new InMemoryTaskStore()): Server {
  const card = buildCard(host, port);
  const requestHandler = new DefaultRequestHandler(card, taskStore, new EchoExecutor());
  const app = express();
  // Readiness probe mirrors the gateway's /readyz so run.ts can wait on both the same way.
  app.get('/readyz', (_req, res) => {
    res.status(200).json({ ready: true });
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(SDK_JSONRPC_PATH, jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const server = app.listen(port, host);
  // Idle SSE subscribers must not be reaped by Node's default timeouts during the test.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 65_000;
  return server;
}

const isMain = process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/\\/g, '/'));
if (isMain) {
  const port = Number.parseInt(process.env.BENCH_SDK_PORT ?? '', 10);
  if (!Number.isInteger(port) || port <= 0) {
    console.error('BENCH_SDK_PORT must be set to a free TCP port');
    process.exit(2);
  }
  const host = process.env.BENCH_SDK_HOST ?? '127.0.0.1';
  const kind = parseSdkStore(process.env.BENCH_SDK_STORE);
  const { store } = await createSdkStore(kind, process.env);
  const server = startSdkEchoServer(host, port, store);
  server.on('listening', () => console.log(`sdk echo server (${kind} task store) listening on http://${host}:${port}`));
  server.on('error', (err) => {
    console.error('sdk echo server failed:', err);
    process.exit(1);
  });
  const stop = (): void => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
