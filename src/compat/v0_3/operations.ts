// How each operation the registry declares a 0.3 name for (operation.legacy) is translated:
// its 0.3 request (JSON-RPC params, or the HTTP+JSON path, query and body) into the 1.0
// request the operation's schema then checks, and its 1.0 result into the 0.3 result. The
// operation itself runs unchanged over the same durable core.
import type { AgentCard, SendMessageResponse, Task, TaskPushNotificationConfig } from '../../protocol/types.ts';
import { legacyCardOf } from './card.ts';
import { messageFromLegacy, messageToLegacy, taskToLegacy, type LegacyObject } from './json-form.ts';
import { messageFromProto, messageToProto, taskToProto } from './proto-form.ts';

/** Which 0.3 binding a request came over: JSON-RPC objects, or the 0.3 proto's ProtoJSON. */
export type LegacyForm = 'json' | 'proto';

export interface LegacyRestRequest {
  /** Values of the route's `{name}` placeholders. */
  path: Record<string, string>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
}

export interface LegacyTranslation {
  /** 0.3 JSON-RPC params → 1.0 params. */
  fromJsonRpc(params: Record<string, unknown>): Record<string, unknown>;
  /** 0.3 HTTP+JSON request → 1.0 params. */
  fromRest(request: LegacyRestRequest): Record<string, unknown>;
  /** The 1.0 result in 0.3 form (unused by streaming operations, whose events are translated one by one). */
  result(result: unknown, form: LegacyForm): unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

function defined(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));
}

/** A 0.3 push config ({id, url, token, authentication: {schemes, credentials}}) as 1.0 fields. */
function pushConfigFromLegacy(raw: unknown): Record<string, unknown> | undefined {
  if (!isObject(raw)) return undefined;
  const authentication = isObject(raw.authentication)
    ? defined({ scheme: Array.isArray(raw.authentication.schemes) ? raw.authentication.schemes[0] : undefined, credentials: raw.authentication.credentials })
    : undefined;
  return defined({ id: raw.id === '' ? undefined : raw.id, url: raw.url, token: raw.token === '' ? undefined : raw.token, authentication });
}

function pushConfigToLegacy(config: TaskPushNotificationConfig): LegacyObject {
  const pushNotificationConfig: LegacyObject = defined({
    id: config.id,
    url: config.url,
    token: config.token,
    authentication: config.authentication === undefined ? undefined : defined({ schemes: [config.authentication.scheme], credentials: config.authentication.credentials }),
  });
  return { taskId: config.taskId, pushNotificationConfig };
}

function pushConfigToProto(config: TaskPushNotificationConfig): LegacyObject {
  const { pushNotificationConfig } = pushConfigToLegacy(config);
  return { name: `tasks/${config.taskId ?? ''}/pushNotificationConfigs/${config.id ?? ''}`, pushNotificationConfig };
}

/** 0.3 MessageSendConfiguration → 1.0 SendMessageConfiguration. Given without `blocking`, 0.3 did not block. */
function configurationFromLegacy(raw: unknown, form: LegacyForm): Record<string, unknown> | undefined {
  if (!isObject(raw)) return undefined;
  const historyLength = form === 'proto' && raw.historyLength === 0 ? undefined : raw.historyLength; // proto3: 0 is unset
  return defined({
    acceptedOutputModes: raw.acceptedOutputModes,
    historyLength,
    taskPushNotificationConfig: pushConfigFromLegacy(form === 'proto' ? raw.pushNotification : raw.pushNotificationConfig),
    returnImmediately: raw.blocking !== true,
  });
}

const sendMessage: LegacyTranslation = {
  fromJsonRpc: (params) =>
    defined({ message: messageFromLegacy(params.message), configuration: configurationFromLegacy(params.configuration, 'json'), metadata: params.metadata }),
  fromRest: ({ body }) =>
    defined({
      message: messageFromProto(body.message ?? body.request),
      configuration: configurationFromLegacy(body.configuration, 'proto'),
      metadata: body.metadata,
    }),
  result(result, form) {
    const response = result as SendMessageResponse;
    if ('message' in response) return form === 'json' ? messageToLegacy(response.message) : { message: messageToProto(response.message) };
    return form === 'json' ? taskToLegacy(response.task) : { task: taskToProto(response.task) };
  },
};

const taskResult = (result: unknown, form: LegacyForm): unknown => (form === 'json' ? taskToLegacy(result as Task) : taskToProto(result as Task));
const noResult = (): unknown => undefined;

const pushConfigResult = (result: unknown, form: LegacyForm): unknown =>
  form === 'json' ? pushConfigToLegacy(result as TaskPushNotificationConfig) : pushConfigToProto(result as TaskPushNotificationConfig);

/** Translations by operation name; every operation with a `legacy` declaration has one (checked by the registry test). */
export const LEGACY_TRANSLATIONS: Readonly<Record<string, LegacyTranslation>> = {
  SendMessage: sendMessage,
  SendStreamingMessage: { ...sendMessage, result: noResult },
  GetTask: {
    fromJsonRpc: (params) => defined({ id: params.id, historyLength: params.historyLength }),
    fromRest: ({ path, query }) => defined({ id: path.id, historyLength: query.historyLength }),
    result: taskResult,
  },
  CancelTask: {
    fromJsonRpc: (params) => defined({ id: params.id, metadata: params.metadata }),
    fromRest: ({ path, body }) => defined({ id: path.id, metadata: body.metadata }),
    result: taskResult,
  },
  SubscribeToTask: {
    fromJsonRpc: (params) => defined({ id: params.id }),
    fromRest: ({ path }) => defined({ id: path.id }),
    result: noResult,
  },
  CreateTaskPushNotificationConfig: {
    fromJsonRpc: (params) => defined({ taskId: params.taskId, ...pushConfigFromLegacy(params.pushNotificationConfig) }),
    fromRest: ({ path, body }) => defined({ taskId: path.taskId, ...pushConfigFromLegacy(body.pushNotificationConfig ?? body.config) }),
    result: pushConfigResult,
  },
  GetTaskPushNotificationConfig: {
    // 0.3 let the config id be left out: the task's id names its default config.
    fromJsonRpc: (params) => defined({ taskId: params.id, id: params.pushNotificationConfigId ?? params.id }),
    fromRest: ({ path }) => defined({ taskId: path.taskId, id: path.id }),
    result: pushConfigResult,
  },
  ListTaskPushNotificationConfigs: {
    fromJsonRpc: (params) => defined({ taskId: params.id }),
    fromRest: ({ path, query }) => defined({ taskId: path.taskId, pageSize: query.pageSize, pageToken: query.pageToken }),
    result(result, form) {
      const configs = ((result as { configs?: TaskPushNotificationConfig[] }).configs ?? []);
      return form === 'json' ? configs.map(pushConfigToLegacy) : { configs: configs.map(pushConfigToProto) };
    },
  },
  DeleteTaskPushNotificationConfig: {
    fromJsonRpc: (params) => defined({ taskId: params.id, id: params.pushNotificationConfigId }),
    fromRest: ({ path }) => defined({ taskId: path.taskId, id: path.id }),
    result: (_result, form) => (form === 'json' ? null : {}),
  },
  GetExtendedAgentCard: {
    fromJsonRpc: () => ({}),
    fromRest: () => ({}),
    result: (result, form) => legacyCardOf(result as AgentCard, { form }),
  },
};
