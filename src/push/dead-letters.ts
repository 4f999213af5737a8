// Dead letters for operators (a2a:operator lists, a2a:admin replays), of their own tenant or,
// with a2a:platform, of every tenant: list the deliveries that were given up on, with their
// last error, and replay one. A replay is sent outside its config's chain under the same
// webhook-id (receivers that saw it already dedup it); delivered, it leaves the list; failed
// again (after the retry policy), it comes back with its replay count.
import type { Queue } from 'bullmq';
import type { PushJobData } from '../../queues/push.ts';
import { A2AError } from '../protocol/errors.ts';
import { ownerFromKey } from '../store/task-store.ts';
import type { DeadLetter, PushStore } from '../store/push/push-store.ts';

export interface DeadLetterView extends Omit<DeadLetter, 'ownerKey'> {
  owner: { agent: string; tenant: string; subject: string };
}

const view = ({ ownerKey, ...letter }: DeadLetter): DeadLetterView => ({ ...letter, owner: ownerFromKey(ownerKey) });

const notFound = (id: string): A2AError =>
  new A2AError('TASK_NOT_FOUND', `There is no dead letter "${id}" for this agent (it was replayed and delivered, dropped as the oldest, or never existed).`, {
    metadata: { deadLetterId: id },
  });

/** Whether a dead letter is of the agent's tasks and, when a tenant is given, of that tenant's. */
function reaches(letter: DeadLetter, agent: string, tenant: string | undefined): boolean {
  const owner = ownerFromKey(letter.ownerKey);
  return owner.agent === agent && (tenant === undefined || owner.tenant === tenant);
}

export class PushDeadLetters {
  constructor(
    private readonly store: PushStore,
    private readonly queue: Queue<PushJobData>,
    /** push.maxDeadLetters: what one shard may hold, so one task's are all read. */
    private readonly maxPerShard: number,
  ) {}

  /** An agent's dead letters of `tenant`'s tasks (undefined: every tenant's), newest first; optionally of one task. */
  async list(agent: string, request: { taskId?: string; pageSize?: number }, tenant?: string): Promise<{ deadLetters: DeadLetterView[] }> {
    const limit = request.pageSize ?? 100;
    const letters = await this.store.listDeadLetters(request.taskId === undefined ? limit : this.maxPerShard, request.taskId);
    const mine = letters.filter((letter) => reaches(letter, agent, tenant) && (request.taskId === undefined || letter.taskId === request.taskId));
    return { deadLetters: mine.slice(0, limit).map(view) };
  }

  /** Replays one of the agent's dead letters of `tenant`'s tasks (undefined: any tenant's); another tenant's is not found. */
  async replay(agent: string, id: string, tenant?: string): Promise<{ id: string; replay: number; state: 'queued' }> {
    const letter = await this.store.readDeadLetter(id);
    if (letter === undefined || !reaches(letter, agent, tenant)) throw notFound(id);
    const replay = letter.replays + 1;
    await this.queue.add(
      'replay',
      { taskId: letter.taskId, configId: letter.configId, eventId: letter.eventId, eventJson: letter.event === null ? '' : JSON.stringify(letter.event), replay },
      { jobId: `${id}.r${replay}` },
    );
    return { id, replay, state: 'queued' };
  }
}
