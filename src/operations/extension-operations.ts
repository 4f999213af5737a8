// The handlers of this gateway's extension methods (src/protocol/operations/extensions.ts): a
// coordinator's assignments, and schedules (src/schedules). A call to one activates its
// extension (src/extensions).
import { A2AError } from '../protocol/errors.ts';
import * as specs from '../protocol/operations/extensions.ts';
import type { ScheduleService } from '../schedules/schedule-service.ts';
import type { GatewayHandler } from '../tasks/gateway-handler.ts';
import { defineUnary } from './definition.ts';

export const listTaskAssignments = defineUnary(specs.listTaskAssignments, (request, call) => call.service.listAssignments(call.owner, request.id));

/** The schedule service, or UnsupportedOperationError when this gateway runs without schedules. */
function schedules(service: GatewayHandler): ScheduleService {
  if (service.schedules === undefined) {
    throw new A2AError('UNSUPPORTED_OPERATION', 'This gateway offers no schedules (schedules.enabled is false; the card does not declare the schedules extension).');
  }
  return service.schedules;
}

export const createSchedule = defineUnary(specs.createSchedule, (request, call) => schedules(call.service).create(call.owner, request));

export const getSchedule = defineUnary(specs.getSchedule, (request, call) => schedules(call.service).get(call.owner, request.id));

export const listSchedules = defineUnary(specs.listSchedules, (request, call) => schedules(call.service).list(call.owner, request));

export const pauseSchedule = defineUnary(specs.pauseSchedule, (request, call) => schedules(call.service).pause(call.owner, request.id));

export const resumeSchedule = defineUnary(specs.resumeSchedule, (request, call) => schedules(call.service).resume(call.owner, request.id));

export const deleteSchedule = defineUnary(specs.deleteSchedule, (request, call) => schedules(call.service).delete(call.owner, request.id));

export const EXTENSION_OPERATIONS = [listTaskAssignments, createSchedule, getSchedule, listSchedules, pauseSchedule, resumeSchedule, deleteSchedule] as const;
