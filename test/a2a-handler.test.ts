// The A2A operations are thin adapters over one handler interface: each declared operation
// calls exactly the A2AHandler method of its own name, with the admitted call as the caller
// and the parsed request unchanged (no store, hub or service internals in between).
import { describe, expect, it } from 'vitest';
import { A2A_OPERATIONS } from '../src/operations/a2a-operations.ts';
import type { Operation, OperationCall } from '../src/operations/definition.ts';
import type { GatewayHandler } from '../src/tasks/gateway-handler.ts';

interface Recorded {
  method: string;
  args: unknown[];
}

function recordingHandler(): { handler: GatewayHandler; calls: Recorded[] } {
  const calls: Recorded[] = [];
  const handler = new Proxy({} as GatewayHandler, {
    get: (_target, name) =>
      (...args: unknown[]) => {
        calls.push({ method: String(name), args });
        return Promise.resolve({ answeredBy: String(name) });
      },
  });
  return { handler, calls };
}

const methodOf = (operationName: string): string => operationName.charAt(0).toLowerCase() + operationName.slice(1);

describe('A2AHandler', () => {
  it('answers every A2A operation through the handler method of the same name', async () => {
    for (const operation of A2A_OPERATIONS as readonly Operation[]) {
      const { handler, calls } = recordingHandler();
      // No extension activated: the call reaches the handler as it is (task generations add to it only when asked).
      const call = { service: handler, owner: { tenant: '', subject: 's', agent: 'a' }, extensions: [], header: () => undefined } as unknown as OperationCall;
      const request = { id: 't-1', taskId: 't-1' };
      const answer = operation.streaming ? await operation.open(request, call) : await operation.handle(request, call);
      expect(calls.map((c) => c.method), operation.name).toEqual([methodOf(operation.name)]);
      const [recorded] = calls;
      expect(recorded?.args[0], operation.name).toBe(call);
      if (operation.name !== 'GetExtendedAgentCard') expect(recorded?.args[1], operation.name).toBe(request);
      expect(answer).toEqual({ answeredBy: methodOf(operation.name) });
    }
  });
});
