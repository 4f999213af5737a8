// The methods of this gateway's extensions (src/extensions declares the extensions that carry
// them): a coordinator's assignments, and schedules. Their handlers are in
// src/operations/extension-operations.ts.
import { createScheduleRequestSchema, listAssignmentsRequestSchema, listSchedulesRequestSchema, scheduleIdRequestSchema } from '../schemas.ts';
import { unarySpec, type OperationSpec } from './spec.ts';

/** A coordinator's assignments, owner-scoped like GetTask. */
export const listTaskAssignments = unarySpec({
  name: 'ListTaskAssignments',
  scope: 'a2a:read',
  request: listAssignmentsRequestSchema,
  rest: [{ method: 'GET', path: '/tasks/{id}/assignments' }],
  restBody: 'none',
});

// Schedules: creating, pausing, resuming and deleting need a2a:write.

export const createSchedule = unarySpec({
  name: 'CreateSchedule',
  scope: 'a2a:write',
  request: createScheduleRequestSchema,
  rest: [{ method: 'POST', path: '/schedules' }],
  restBody: 'required',
});

export const getSchedule = unarySpec({
  name: 'GetSchedule',
  scope: 'a2a:read',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'GET', path: '/schedules/{id}' }],
  restBody: 'none',
});

export const listSchedules = unarySpec({
  name: 'ListSchedules',
  scope: 'a2a:read',
  request: listSchedulesRequestSchema,
  rest: [{ method: 'GET', path: '/schedules' }],
  restBody: 'none',
});

export const pauseSchedule = unarySpec({
  name: 'PauseSchedule',
  scope: 'a2a:write',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'POST', path: '/schedules/{id}:pause' }],
  restBody: 'optional',
});

export const resumeSchedule = unarySpec({
  name: 'ResumeSchedule',
  scope: 'a2a:write',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'POST', path: '/schedules/{id}:resume' }],
  restBody: 'optional',
});

export const deleteSchedule = unarySpec({
  name: 'DeleteSchedule',
  scope: 'a2a:write',
  request: scheduleIdRequestSchema,
  rest: [{ method: 'DELETE', path: '/schedules/{id}' }],
  restBody: 'none',
});

export const SCHEDULE_SPECS: readonly OperationSpec[] = [createSchedule, getSchedule, listSchedules, pauseSchedule, resumeSchedule, deleteSchedule];
