// One entry of a task's replay buffer (its events stream).
import type { StreamResponse } from '../protocol/types.ts';

export interface StoredEvent {
  id: string;
  /** The StreamResponse JSON exactly as stored. */
  json: string;
  event: StreamResponse;
}

/** A stream entry as read; its JSON is parsed on first use only (replaying a buffer forwards the JSON as is). */
export function storedEvent(id: string, json: string): StoredEvent {
  let parsed: StreamResponse | undefined;
  return {
    id,
    json,
    get event(): StreamResponse {
      parsed ??= JSON.parse(json) as StreamResponse;
      return parsed;
    },
  };
}
