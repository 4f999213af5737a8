// The assignments extension: a coordinator's assignments (the sub-agent tasks it delegated to),
// with their states and start order. One method, ListTaskAssignments, owner-scoped like GetTask.
import { defineUnary } from '../operations/definition.ts';
import { listAssignmentsRequestSchema } from '../protocol/schemas.ts';
import { defineExtension } from './definition.ts';

export const ASSIGNMENTS_EXTENSION_URI = 'urn:a2a-gateway:ext:assignments:v1';

export const listTaskAssignments = defineUnary({
  name: 'ListTaskAssignments',
  scope: 'a2a:read',
  request: listAssignmentsRequestSchema,
  rest: [{ method: 'GET', path: '/tasks/{id}/assignments' }],
  restBody: 'none',
  handle: (request, call) => call.service.listAssignments(call.owner, request.id),
});

export const assignmentsExtension = defineExtension({
  uri: ASSIGNMENTS_EXTENSION_URI,
  description:
    "A coordinator's assignments: the sub-agent tasks it delegated to, with their states and start order. " +
    'JSON-RPC method ListTaskAssignments ({id}); HTTP+JSON GET /tasks/{id}/assignments.',
  required: false,
  methods: [listTaskAssignments],
});
