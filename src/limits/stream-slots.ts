// Open streams (SSE) per owner and in all, on this gateway process. A stream holds a socket
// and buffers of this process, so this process is where it is bounded: counting across
// gateways would need a Redis entry per stream with a lease renewed while it stays open (a
// gateway that dies would otherwise keep its streams' slots taken), a write per open and close
// and a renewal per stream per interval, for a resource that is local anyway. With N gateways
// behind a balancer an owner may hold up to N × maxStreamsPerOwner streams.
import { LimitExceededError } from './limit-refusal.ts';

export interface StreamCaps {
  /** Streams one owner may have open on this process (0 = no cap). */
  maxStreamsPerOwner: number;
  /** Streams this process holds open in all (0 = no cap). */
  maxStreams: number;
}

/** One taken stream slot; release it exactly once, when the stream ends (or fails to start). */
export interface StreamSlot {
  release(): void;
}

export class StreamSlots {
  private readonly perOwner = new Map<string, number>();
  private total = 0;

  constructor(private readonly caps: StreamCaps) {}

  get open(): number {
    return this.total;
  }

  openBy(ownerKey: string): number {
    return this.perOwner.get(ownerKey) ?? 0;
  }

  /** Takes a slot for a stream of `ownerKey`, or refuses (429 for the owner's cap, 503 for the process's). */
  take(ownerKey: string): StreamSlot {
    const { maxStreamsPerOwner, maxStreams } = this.caps;
    const mine = this.openBy(ownerKey);
    if (maxStreams > 0 && this.total >= maxStreams) {
      throw new LimitExceededError(
        'limits.maxStreams',
        'UNAVAILABLE',
        `This gateway holds ${this.total} open streams, the most it serves at once (limits.maxStreams); nothing was started or stored. Retry after the Retry-After delay (another gateway may have room).`,
        { httpStatus: 503, retryAfterSeconds: 1, metadata: { reason: 'GATEWAY_STREAMS_FULL', limit: String(maxStreams) } },
      );
    }
    if (maxStreamsPerOwner > 0 && mine >= maxStreamsPerOwner) {
      throw new LimitExceededError(
        'limits.maxStreamsPerOwner',
        'RESOURCE_EXHAUSTED',
        `You have ${mine} streams of this agent open on this gateway, the most allowed (limits.maxStreamsPerOwner); nothing was started or stored. Close a stream (a task's events can be resumed later with SubscribeToTask and Last-Event-ID), then retry.`,
        { retryAfterSeconds: 1, metadata: { reason: 'TOO_MANY_STREAMS', limit: String(maxStreamsPerOwner) } },
      );
    }
    this.total += 1;
    this.perOwner.set(ownerKey, mine + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total -= 1;
        const left = (this.perOwner.get(ownerKey) ?? 1) - 1;
        if (left <= 0) this.perOwner.delete(ownerKey);
        else this.perOwner.set(ownerKey, left);
      },
    };
  }
}
