// A stored 1.0 stream event as the 0.3 binding sends it: translated, with `final` set on the
// status update after which this stream ends (a terminal state, or the question that ends a
// SendStreamingMessage turn).
import type { StreamResponse, TaskState } from '../../protocol/types.ts';
import { streamEventToLegacy } from './json-form.ts';
import type { LegacyForm } from './operations.ts';
import { streamEventToProto } from './proto-form.ts';

export function legacyStreamFrame(streamResponseJson: string, form: LegacyForm, closesOn: (state: TaskState) => boolean): string {
  const event = JSON.parse(streamResponseJson) as StreamResponse;
  return JSON.stringify(form === 'json' ? streamEventToLegacy(event, closesOn) : streamEventToProto(event, closesOn));
}
