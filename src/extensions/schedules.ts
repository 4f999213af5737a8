// The schedules extension: a message sent to the agent later (`at`) or repeatedly (`cron`), each
// firing a task of the schedule's owner (src/schedules). A2A 1.0 has no schedule method, so the
// six methods are this gateway's; creating, pausing, resuming and deleting need a2a:write.
import { SCHEDULE_SPECS } from '../protocol/operations/extensions.ts';
import { defineExtension } from './definition.ts';

export const SCHEDULES_EXTENSION_URI = 'urn:a2a-gateway:ext:schedules:v1';

export const schedulesExtension = defineExtension({
  uri: SCHEDULES_EXTENSION_URI,
  description:
    'Schedules: send a message to this agent at a time or on a cron expression (with time zone); each firing is a task of yours. ' +
    'JSON-RPC methods CreateSchedule, GetSchedule, ListSchedules, PauseSchedule, ResumeSchedule, DeleteSchedule; HTTP+JSON routes under /schedules (see openapi.yaml).',
  required: false,
  methods: SCHEDULE_SPECS,
});
