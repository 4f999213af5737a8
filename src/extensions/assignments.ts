// The assignments extension: a coordinator's assignments (the sub-agent tasks it delegated to),
// with their states and start order. One method, ListTaskAssignments, owner-scoped like GetTask.
import { listTaskAssignments } from '../protocol/operations/extensions.ts';
import { defineExtension } from './definition.ts';

export const ASSIGNMENTS_EXTENSION_URI = 'urn:a2a-gateway:ext:assignments:v1';

export const assignmentsExtension = defineExtension({
  uri: ASSIGNMENTS_EXTENSION_URI,
  description:
    "A coordinator's assignments: the sub-agent tasks it delegated to, with their states and start order. " +
    'JSON-RPC method ListTaskAssignments ({id}); HTTP+JSON GET /tasks/{id}/assignments.',
  required: false,
  methods: [listTaskAssignments],
});
