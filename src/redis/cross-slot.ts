// Reads that span many slots (ListTasks' page of tasks, the quota sweep's TTLs, the push
// outbox's shards) and key scans, written once for a single Redis and a Redis Cluster alike.
// On a Cluster a pipeline may only hold keys one node serves, and SCAN walks one node's keys.
import type { ChainableCommander, Cluster } from 'ioredis';
import { isCluster, type RedisClient } from './connection.ts';
import { keySlot } from './key-slot.ts';

export type PipelineReply = [Error | null, unknown];

/**
 * Runs `add(pipeline, i)` for each group, groups[i] naming a key of the slot that group's
 * commands touch, and answers each group's replies in order. A single Redis gets one pipeline;
 * a Cluster one per node (in parallel), so a page of tasks on three masters costs one round
 * trip per master, not one per task.
 */
export async function pipelineAcrossSlots(redis: RedisClient, groups: readonly string[], add: (pipeline: ChainableCommander, index: number) => void): Promise<PipelineReply[][]> {
  const byNode = isCluster(redis) ? groupByNode(redis, groups) : [groups.map((_, index) => index)];
  const answers: PipelineReply[][] = new Array(groups.length);
  await Promise.all(
    byNode.map(async (indexes) => {
      const pipeline = redis.pipeline();
      const counts: number[] = [];
      for (const index of indexes) {
        const before = pipeline.length;
        add(pipeline, index);
        counts.push(pipeline.length - before);
      }
      const replies = ((await pipeline.exec()) ?? []) as PipelineReply[];
      let at = 0;
      for (const [position, index] of indexes.entries()) {
        const count = counts[position] as number;
        answers[index] = replies.slice(at, at + count);
        at += count;
      }
    }),
  );
  return answers;
}

/** Group indexes by the node serving their slot (by slot while the slot map is not known yet). */
function groupByNode(cluster: Cluster, groups: readonly string[]): number[][] {
  const nodes = new Map<string, number[]>();
  for (const [index, key] of groups.entries()) {
    const slot = keySlot(key);
    const node = cluster.slots[slot]?.[0] ?? `slot:${slot}`;
    const list = nodes.get(node);
    if (list === undefined) nodes.set(node, [index]);
    else list.push(index);
  }
  return [...nodes.values()];
}

/**
 * Every key matching `pattern`, a batch at a time: SCAN on a single Redis, SCAN on every master
 * of a Cluster (each holds only its slots' keys). Replicas are skipped: they hold copies.
 */
export async function* scanKeys(redis: RedisClient, pattern: string, count: number): AsyncGenerator<string[]> {
  const servers = isCluster(redis) ? redis.nodes('master') : [redis];
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}
