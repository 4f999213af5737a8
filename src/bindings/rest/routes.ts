// The HTTP+JSON binding's routes (spec 5.3, 11.3), each with and without the optional
// `/{tenant}` prefix. One table serves the router, the OpenAPI agreement test and the docs.

export type RestOperation =
  | 'SendMessage'
  | 'SendStreamingMessage'
  | 'GetTask'
  | 'ListTasks'
  | 'CancelTask'
  | 'SubscribeToTask'
  | 'CreateTaskPushNotificationConfig'
  | 'GetTaskPushNotificationConfig'
  | 'ListTaskPushNotificationConfigs'
  | 'DeleteTaskPushNotificationConfig'
  | 'GetExtendedAgentCard'
  | 'ListTaskAssignments'
  | 'ListPushDeadLetters'
  | 'ReplayPushDeadLetter'
  | 'CreateSchedule'
  | 'GetSchedule'
  | 'ListSchedules'
  | 'PauseSchedule'
  | 'ResumeSchedule'
  | 'DeleteSchedule';

export interface RestRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path below the binding's base URL, with `{name}` placeholders. */
  path: string;
  operation: RestOperation;
}

/** Where the HTTP+JSON binding is mounted; the agent card advertises `<publicUrl><base>`. */
export const REST_BASE_PATH = '/a2a/rest';
/** Where the JSON-RPC endpoint listens. */
export const JSONRPC_PATH = '/a2a/jsonrpc';

export const REST_ROUTES: readonly RestRoute[] = [
  { method: 'POST', path: '/message:send', operation: 'SendMessage' },
  { method: 'POST', path: '/message:stream', operation: 'SendStreamingMessage' },
  { method: 'GET', path: '/tasks', operation: 'ListTasks' },
  { method: 'GET', path: '/tasks/{id}', operation: 'GetTask' },
  { method: 'POST', path: '/tasks/{id}:cancel', operation: 'CancelTask' },
  // The proto maps subscribe to GET, the spec's prose (11.3.2) and the official client to POST.
  { method: 'POST', path: '/tasks/{id}:subscribe', operation: 'SubscribeToTask' },
  { method: 'GET', path: '/tasks/{id}:subscribe', operation: 'SubscribeToTask' },
  { method: 'POST', path: '/tasks/{taskId}/pushNotificationConfigs', operation: 'CreateTaskPushNotificationConfig' },
  { method: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs', operation: 'ListTaskPushNotificationConfigs' },
  { method: 'GET', path: '/tasks/{taskId}/pushNotificationConfigs/{id}', operation: 'GetTaskPushNotificationConfig' },
  { method: 'DELETE', path: '/tasks/{taskId}/pushNotificationConfigs/{id}', operation: 'DeleteTaskPushNotificationConfig' },
  { method: 'GET', path: '/extendedAgentCard', operation: 'GetExtendedAgentCard' },
  // Gateway extension (not an A2A operation): the sub-agent tasks a coordinator delegated to.
  { method: 'GET', path: '/tasks/{id}/assignments', operation: 'ListTaskAssignments' },
  // Gateway extension (operators, a2a:admin): push deliveries given up on, and their replay.
  { method: 'GET', path: '/push/deadLetters', operation: 'ListPushDeadLetters' },
  { method: 'POST', path: '/push/deadLetters/{id}:replay', operation: 'ReplayPushDeadLetter' },
  // Gateway extension: schedules (urn:a2a-gateway:ext:schedules:v1 on the card).
  { method: 'POST', path: '/schedules', operation: 'CreateSchedule' },
  { method: 'GET', path: '/schedules/{id}', operation: 'GetSchedule' },
  { method: 'GET', path: '/schedules', operation: 'ListSchedules' },
  { method: 'POST', path: '/schedules/{id}:pause', operation: 'PauseSchedule' },
  { method: 'POST', path: '/schedules/{id}:resume', operation: 'ResumeSchedule' },
  { method: 'DELETE', path: '/schedules/{id}', operation: 'DeleteSchedule' },
];

export interface RouteMatch {
  route: RestRoute;
  params: Record<string, string>;
  tenant: string | undefined;
}

interface CompiledRoute {
  route: RestRoute;
  names: string[];
  pattern: RegExp;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

function compile(route: RestRoute): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split(/(\{[a-zA-Z]+\})/)
    .map((piece) => {
      const name = /^\{([a-zA-Z]+)\}$/.exec(piece)?.[1];
      if (name === undefined) return escapeRegExp(piece);
      names.push(name);
      // An id segment stops at '/' and at the ':verb' suffix.
      return '([^/:]+)';
    })
    .join('');
  return { route, names, pattern: new RegExp(`^(?:/([^/:]+))?${source}$`) };
}

const COMPILED = REST_ROUTES.map(compile);

/**
 * Match a path below the base against the table. Returns `undefined` for an unknown path,
 * and `'method-not-allowed'` when the path exists for another method.
 */
export function matchRestRoute(method: string, path: string): RouteMatch | 'method-not-allowed' | undefined {
  let pathMatched = false;
  for (const compiled of COMPILED) {
    const match = compiled.pattern.exec(path);
    if (match === null) continue;
    const tenantRaw = match[1];
    // "/tasks/tasks" is task "tasks", not the task list of tenant "tasks".
    if (tenantRaw === 'tasks') continue;
    pathMatched = true;
    if (compiled.route.method !== method) continue;
    const params: Record<string, string> = {};
    compiled.names.forEach((name, index) => {
      params[name] = decodeURIComponent(match[index + 2] ?? '');
    });
    return {
      route: compiled.route,
      params,
      tenant: tenantRaw === undefined ? undefined : decodeURIComponent(tenantRaw),
    };
  }
  return pathMatched ? 'method-not-allowed' : undefined;
}

/** Methods served on a path (for the Allow header of a 405). */
export function allowedMethods(path: string): string[] {
  const methods = new Set<string>();
  for (const method of ['GET', 'POST', 'DELETE']) {
    const match = matchRestRoute(method, path);
    if (match !== undefined && match !== 'method-not-allowed') methods.add(method);
  }
  return [...methods];
}
