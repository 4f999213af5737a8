// Operations for the gateway's operators (a2a:admin), not for agents' callers: the push
// deliveries that were given up on (dead letters), listed and replayed per agent. They are not
// an extension a client activates, so no card declares them; openapi.yaml documents them.
import { listDeadLettersRequestSchema, replayDeadLetterRequestSchema } from '../protocol/schemas.ts';
import type { PushDeadLetters } from '../push/dead-letters.ts';
import type { TaskService } from '../tasks/service.ts';
import { pushNotSupported } from './a2a-operations.ts';
import { defineUnary } from './definition.ts';

function deadLetters(service: TaskService): PushDeadLetters {
  if (service.pushDeadLetters === undefined) throw pushNotSupported();
  return service.pushDeadLetters;
}

export const listPushDeadLetters = defineUnary({
  name: 'ListPushDeadLetters',
  scope: 'a2a:admin',
  request: listDeadLettersRequestSchema,
  rest: [{ method: 'GET', path: '/push/deadLetters' }],
  restBody: 'none',
  handle: (request, call) => deadLetters(call.service).list(call.owner.agent, request),
});

export const replayPushDeadLetter = defineUnary({
  name: 'ReplayPushDeadLetter',
  scope: 'a2a:admin',
  request: replayDeadLetterRequestSchema,
  rest: [{ method: 'POST', path: '/push/deadLetters/{id}:replay' }],
  restBody: 'optional',
  handle: (request, call) => deadLetters(call.service).replay(call.owner.agent, request.id),
});

export const OPERATOR_OPERATIONS = [listPushDeadLetters, replayPushDeadLetter] as const;
