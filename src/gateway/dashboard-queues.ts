// The queues the /admin/queues dashboard shows and the queue-depth metric reads: every agent's
// turn queue, then the push and schedule queues. Agents come and go through the admin API while
// the gateway runs, so the list follows them (server.ts tells it), and whoever shows it is told.
import type { Queue } from 'bullmq';

export class DashboardQueues {
  private current: readonly Queue[] = [];
  private readonly listeners: ((queues: readonly Queue[]) => void)[] = [];

  constructor(
    /** An agent's turn queue (one per name, kept by the caller). */
    private readonly turnQueueOf: (agent: string) => Queue,
    /** Shown after the agents' queues, always. */
    private readonly others: readonly Queue[],
    agents: readonly string[],
  ) {
    this.setAgents(agents);
  }

  list(): readonly Queue[] {
    return this.current;
  }

  /** Calls `listener` with the new list whenever the agents change. */
  onChange(listener: (queues: readonly Queue[]) => void): void {
    this.listeners.push(listener);
  }

  /** The agents served now, in the order to show them. */
  setAgents(agents: readonly string[]): void {
    const next = [...agents.map((agent) => this.turnQueueOf(agent)), ...this.others];
    if (next.length === this.current.length && next.every((queue, index) => queue === this.current[index])) return;
    this.current = next;
    for (const listener of this.listeners) listener(next);
  }
}
