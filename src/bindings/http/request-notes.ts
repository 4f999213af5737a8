// What a request turned out to be about (who called, which operation, which task), noted by
// the bindings as they learn it and read once the response is finished, for the access log.
import type { ServerResponse } from 'node:http';

export interface RequestNotes {
  principal?: string;
  tenant?: string;
  operation?: string;
  taskId?: string;
}

const notes = new WeakMap<ServerResponse, RequestNotes>();

export function noteRequest(response: ServerResponse, fields: RequestNotes): void {
  const known = notes.get(response);
  if (known === undefined) notes.set(response, { ...fields });
  else Object.assign(known, fields);
}

export function notesOf(response: ServerResponse): RequestNotes {
  return notes.get(response) ?? {};
}
