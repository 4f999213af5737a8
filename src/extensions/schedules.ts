// The schedules extension: a message sent to the agent later (`at`) or repeatedly (`cron`), each
// firing a task of the schedule's owner (src/schedules). A2A 1.0 has no schedule method, so the
// six methods are this gateway's; creating, pausing, resuming and deleting need a2a:write.
import { A2AError } from '../protocol/errors.ts';
import { createScheduleRequestSchema, listSchedulesRequestSchema, scheduleIdRequestSchema } from '../protocol/schemas.ts';
import { defineUnary } from '../operations/definition.ts';
import type { ScheduleService } from '../schedules/schedule-service.ts';
import { SCHEDULES_EXTENSION_URI } from '../schedules/schedule-types.ts';
import type { GatewayHandler } from '../tasks/gateway-handler.ts';
import { defineExtension } from './definition.ts';

/** The schedule service, or UnsupportedOperationError when this gateway runs without schedules. */
function schedules(service: GatewayHandler): ScheduleService {
  if (service.schedules === undefined) {
    throw new A2AError('UNSUPPORTED_OPERATION', 'This gateway offers no schedules (schedules.enabled is false; the card does not declare the schedules extension).');
  }
  return service.schedules;
}

export const createSchedule = defineUnary({
  name: 'CreateSchedule',
  scope: 'a2a:write',
  request: createScheduleRequestSchema,
  rest: [{ method: 'POST', path: '/schedules' }],
  restBody: 'required',
  handle: (request, call) => schedules(call.service).create(call.owner, request),
});

export const getSchedule = defineUnary({
  name: 'GetSchedule',
  scope: 'a2a:read',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'GET', path: '/schedules/{id}' }],
  restBody: 'none',
  handle: (request, call) => schedules(call.service).get(call.owner, request.id),
});

export const listSchedules = defineUnary({
  name: 'ListSchedules',
  scope: 'a2a:read',
  request: listSchedulesRequestSchema,
  rest: [{ method: 'GET', path: '/schedules' }],
  restBody: 'none',
  handle: (request, call) => schedules(call.service).list(call.owner, request),
});

export const pauseSchedule = defineUnary({
  name: 'PauseSchedule',
  scope: 'a2a:write',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'POST', path: '/schedules/{id}:pause' }],
  restBody: 'optional',
  handle: (request, call) => schedules(call.service).pause(call.owner, request.id),
});

export const resumeSchedule = defineUnary({
  name: 'ResumeSchedule',
  scope: 'a2a:write',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'POST', path: '/schedules/{id}:resume' }],
  restBody: 'optional',
  handle: (request, call) => schedules(call.service).resume(call.owner, request.id),
});

export const deleteSchedule = defineUnary({
  name: 'DeleteSchedule',
  scope: 'a2a:write',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'DELETE', path: '/schedules/{id}' }],
  restBody: 'none',
  handle: (request, call) => schedules(call.service).delete(call.owner, request.id),
});

export const schedulesExtension = defineExtension({
  uri: SCHEDULES_EXTENSION_URI,
  description:
    'Schedules: send a message to this agent at a time or on a cron expression (with time zone); each firing is a task of yours. ' +
    'JSON-RPC methods CreateSchedule, GetSchedule, ListSchedules, PauseSchedule, ResumeSchedule, DeleteSchedule; HTTP+JSON routes under /schedules (see openapi.yaml).',
  required: false,
  methods: [createSchedule, getSchedule, listSchedules, pauseSchedule, resumeSchedule, deleteSchedule],
});
