// The victim: an ordinary user calling GetTask over one keep-alive connection, ~20 times a
// second, recording each call's latency and whether it succeeded.
import { Agent, request } from 'node:http';

export interface VictimWindow {
  latenciesMs: number[];
  errors: number;
}

export class Victim {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private window: VictimWindow = { latenciesMs: [], errors: 0 };
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly intervalMs = 50,
  ) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const started = performance.now();
        const ok = await this.getTask();
        const elapsed = performance.now() - started;
        this.window.latenciesMs.push(elapsed);
        if (!ok) this.window.errors += 1;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, this.intervalMs - elapsed)));
      }
    })();
  }

  /** What the victim saw since the last call. */
  take(): VictimWindow {
    const window = this.window;
    this.window = { latenciesMs: [], errors: 0 };
    return window;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    this.agent.destroy();
  }

  private getTask(): Promise<boolean> {
    return new Promise((resolve) => {
      const req = request(this.url, { agent: this.agent, headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${this.token}` }, timeout: 15_000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
        res.on('error', () => resolve(false));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
  }
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}
