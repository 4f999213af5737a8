// GetTask and ListTasks (spec 3.1.3, 3.1.4): the owner's tasks as they stand. A large answer's
// bytes count against the caller's rate, as a request body's do (limits.requestBytesPerToken).
import { LimitExceededError } from '../limits/limit-refusal.ts';
import { taskNotFound } from '../protocol/errors.ts';
import type { GetTaskRequest, ListTasksRequest, ListTasksResponse, Task } from '../protocol/types.ts';
import { TaskListing, type ListBounds } from '../store/task-listing.ts';
import { LARGE_TASK_BYTES } from '../store/task-read.ts';
import { ownerKeyOf, type TaskStore } from '../store/task-store.ts';
import type { Caller } from './a2a-handler.ts';
import { assembledTask, releaseLarge } from './task-answer.ts';
import { decodePageToken, encodePageToken } from './page-token.ts';

const DEFAULT_PAGE_SIZE = 50;
/** The defaults of limits.maxListPageBytes and limits.maxListScannedEntries. */
const DEFAULT_LIST_BOUNDS: ListBounds = { maxPageBytes: 1024 * 1024, maxScannedEntries: 250 };

export class TaskReads {
  private readonly listing: TaskListing;
  /** ListTasks calls in progress on this process, by owner key. */
  private readonly listsInProgress = new Map<string, number>();

  /** `listBounds`: what one ListTasks call may read and return (limits.maxListPageBytes, limits.maxListScannedEntries). */
  constructor(
    private readonly store: TaskStore,
    private readonly listBounds: ListBounds | undefined,
  ) {
    this.listing = new TaskListing(store, listBounds ?? DEFAULT_LIST_BOUNDS);
  }

  /**
   * The task's read is charged to the caller before it is returned: polling huge tasks costs
   * rate, as a ListTasks page does. A task whose artifacts weigh more than LARGE_TASK_BYTES is
   * not built by the read script: it is read with plain commands (a copy of its bytes, not Lua
   * building a string of them), and when it weighs more than the caller's whole bucket pays
   * after the read, only once the caller has paid for it (429 while its rate cannot): a reader
   * polling a task that grows to tens of MB costs Redis what its rate buys, not a whole-task
   * assembly per poll. Small tasks take the one round trip they always took.
   */
  async getTask(caller: Caller, request: GetTaskRequest): Promise<Task> {
    const payAfterBytes = caller.largeAnswers?.payAfterBytes ?? 0;
    const bound = payAfterBytes > 0 ? Math.min(payAfterBytes, LARGE_TASK_BYTES) : LARGE_TASK_BYTES;
    const read = await this.store.gateway.readTaskWithin(request.id, caller.owner, request.historyLength, bound);
    if (read === undefined) throw taskNotFound(request.id);
    if (!('large' in read)) {
      await caller.chargeAnswerBytes(read.bytes);
      return read.task;
    }
    const prepaid = payAfterBytes > 0 && read.artifactBytes > payAfterBytes ? read.artifactBytes : 0;
    if (prepaid > 0) await caller.largeAnswers?.pay(prepaid);
    const large = await this.store.gateway.readRawLargeTask(request.id, caller.owner, request.historyLength);
    if (large === undefined) throw taskNotFound(request.id);
    // What was not paid first (all of it, or what it holds besides its artifacts) is charged after.
    try {
      await caller.chargeAnswerBytes(Math.max(0, large.read.bytes - prepaid));
    } catch (error) {
      releaseLarge(large);
      throw error;
    }
    return (await assembledTask(large, caller.answersSpliced === true)).task;
  }

  /** The page's bytes are charged to the caller before it is returned. */
  async listTasks(caller: Caller, request: ListTasksRequest): Promise<ListTasksResponse> {
    const { owner } = caller;
    const pageSize = request.pageSize ?? DEFAULT_PAGE_SIZE;
    const release = this.takeListSlot(ownerKeyOf(owner));
    try {
      const page = await this.listing.list({
        owner,
        contextId: request.contextId,
        state: request.status,
        pageSize,
        cursor: request.pageToken ? decodePageToken(request.pageToken) : undefined,
        statusTimestampAfterMs: request.statusTimestampAfter === undefined ? undefined : Date.parse(request.statusTimestampAfter),
        historyLength: request.historyLength ?? 0,
        includeArtifacts: request.includeArtifacts === true,
      });
      await caller.chargeAnswerBytes(page.bytes);
      return {
        tasks: page.tasks,
        nextPageToken: page.next === undefined ? '' : encodePageToken(page.next),
        pageSize,
        totalSize: page.total,
      };
    } finally {
      release();
    }
  }

  /**
   * A page costs this process up to maxPageBytes of memory and the event loop's time to build
   * it: one owner's parallel calls are bounded here (per process, like its streams).
   */
  private takeListSlot(ownerKey: string): () => void {
    const cap = this.listBounds?.maxConcurrentPerOwner ?? 0;
    const running = this.listsInProgress.get(ownerKey) ?? 0;
    if (cap > 0 && running >= cap) {
      throw new LimitExceededError(
        'limits.maxConcurrentListsPerOwner',
        'RESOURCE_EXHAUSTED',
        `You have ${running} ListTasks calls in progress on this gateway, the most allowed at once (limits.maxConcurrentListsPerOwner). Wait for one to answer, then retry.`,
        { retryAfterSeconds: 1, metadata: { reason: 'TOO_MANY_CONCURRENT_LISTS', limit: String(cap) } },
      );
    }
    this.listsInProgress.set(ownerKey, running + 1);
    return () => {
      const left = (this.listsInProgress.get(ownerKey) ?? 1) - 1;
      if (left <= 0) this.listsInProgress.delete(ownerKey);
      else this.listsInProgress.set(ownerKey, left);
    };
  }
}
