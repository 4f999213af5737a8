// The four push-notification config operations (spec 3.1.7–3.1.10) and configs riding on
// SendMessage, for one owner. A config is checked before anything is stored (URL form, SSRF
// policy with its host resolved now), stored in the task's slot, then the task is indexed in its
// push shard's outbox (docs/redis-slots.md: claim, change, index afterwards). Every answer
// shows a config's secrets masked.
import { newId } from '../ids.ts';
import { A2AError, invalidParams, taskNotFound } from '../protocol/errors.ts';
import { LimitExceededError } from '../limits/limit-refusal.ts';
import type { TaskPushNotificationConfig } from '../protocol/types.ts';
import { ownerKeyOf, type Owner } from '../store/task-store.ts';
import { configView, isMasked, SECRET_MASK, type StoredPushConfig } from './push-config.ts';
import type { CursorStart, PushStore } from '../store/push/push-store.ts';
import { BlockedReceiverError, type ReceiverPolicy } from './receiver-policy.ts';

export interface PushConfigsOptions {
  store: PushStore;
  policy: ReceiverPolicy;
  maxConfigsPerTask: number;
  /** Called once a task has a config: the outbox may start at once (fast path). */
  onIndexed?: (taskId: string) => void;
}

export class PushConfigs {
  constructor(private readonly options: PushConfigsOptions) {}

  /**
   * Checks a config and gives it its stored form; nothing is written. `field` names where the
   * config sits in the request, for the error's field violations.
   */
  async prepare(taskId: string, input: TaskPushNotificationConfig, field: string, now: Date = new Date()): Promise<StoredPushConfig> {
    // A config read back and sent again carries masks, not secrets: storing them would replace
    // the secret with the mask.
    const masked = [
      ...(isMasked(input.token) ? [`${field}token`] : []),
      ...(isMasked(input.authentication?.credentials) ? [`${field}authentication.credentials`] : []),
    ];
    if (masked.length > 0) {
      throw invalidParams(
        masked.map((path) => ({ field: path, description: `is the mask reads show in place of a stored secret (${SECRET_MASK}); secrets are never returned, so send the secret itself` })),
        'A push-notification config secret is a mask, not a secret; nothing was stored.',
      );
    }
    try {
      await this.options.policy.checkReceiver(input.url);
    } catch (error) {
      if (!(error instanceof BlockedReceiverError)) throw error;
      throw new A2AError('INVALID_PARAMS', `The webhook URL is refused: ${error.message}`, {
        violations: [{ field: `${field}url`, description: error.message }],
        metadata: { reason: `PUSH_URL_${error.reason}`, ...(error.address === undefined ? {} : { address: error.address }) },
      });
    }
    const config: StoredPushConfig = { id: input.id ?? newId(), taskId, url: input.url, createdAtMs: now.getTime() };
    if (input.token !== undefined) config.token = input.token;
    if (input.authentication !== undefined) config.authentication = input.authentication;
    return config;
  }

  /**
   * Stores a prepared config on an owner's task and indexes the task. `cursorStart`: 'begin' for
   * a config that came with the message creating the task (it gets every event), 'now' for one
   * added later (it gets the events after it was added), after a given event for one that came
   * with a follow-up message (read before the message was accepted: see cursorBefore).
   */
  async attach(owner: Owner, config: StoredPushConfig, cursorStart: CursorStart): Promise<void> {
    const saved = await this.options.store.saveConfig(ownerKeyOf(owner), config, this.options.maxConfigsPerTask, cursorStart);
    if (saved.kind === 'not-found') throw taskNotFound(config.taskId);
    if (saved.kind === 'too-many') {
      throw new LimitExceededError(
        'push.maxConfigsPerTask',
        'RESOURCE_EXHAUSTED',
        `Task ${config.taskId} already has ${saved.count} push-notification configs, the most one task may have (push.maxConfigsPerTask); nothing was stored. Delete one first.`,
        { metadata: { reason: 'PUSH_CONFIG_LIMIT', limit: String(this.options.maxConfigsPerTask), taskId: config.taskId } },
      );
    }
    await this.options.store.index(config.taskId);
    this.options.onIndexed?.(config.taskId);
  }

  /**
   * Where a config riding on a follow-up message starts, read before the message is accepted:
   * it then gets every event from the acceptance on (its SUBMITTED announcement, the turn it
   * starts), and perhaps a few of a running turn's just before it, never fewer.
   */
  async cursorBefore(taskId: string): Promise<CursorStart> {
    return { afterEventId: await this.options.store.newestEventId(taskId) };
  }

  async create(owner: Owner, request: TaskPushNotificationConfig & { taskId: string }): Promise<TaskPushNotificationConfig> {
    // A task that is not the caller's is refused as missing before its URL is even resolved.
    if ((await this.options.store.readConfigs(ownerKeyOf(owner), request.taskId)) === undefined) throw taskNotFound(request.taskId);
    const config = await this.prepare(request.taskId, request, '');
    await this.attach(owner, config, 'now');
    return configView(config, request.tenant);
  }

  async get(owner: Owner, request: { taskId: string; id: string; tenant?: string }): Promise<TaskPushNotificationConfig> {
    const configs = await this.options.store.readConfigs(ownerKeyOf(owner), request.taskId, request.id);
    if (configs === undefined) throw taskNotFound(request.taskId);
    const config = configs[0];
    if (config === undefined) {
      throw new A2AError('TASK_NOT_FOUND', `Task ${request.taskId} has no push-notification config "${request.id}".`, {
        metadata: { taskId: request.taskId, configId: request.id },
      });
    }
    return configView(config, request.tenant);
  }

  /** The task's active configs (one disabled by a 410 is left out; Get still shows it). */
  async list(owner: Owner, request: { taskId: string; tenant?: string }): Promise<{ configs: TaskPushNotificationConfig[]; nextPageToken: string }> {
    const configs = await this.options.store.readConfigs(ownerKeyOf(owner), request.taskId);
    if (configs === undefined) throw taskNotFound(request.taskId);
    // At most maxConfigsPerTask: one page holds them all.
    return { configs: configs.filter((c) => c.disabled === undefined).map((c) => configView(c, request.tenant)), nextPageToken: '' };
  }

  async delete(owner: Owner, request: { taskId: string; id: string }): Promise<Record<string, never>> {
    if (!(await this.options.store.deleteConfig(ownerKeyOf(owner), request.taskId, request.id))) throw taskNotFound(request.taskId);
    return {};
  }
}
