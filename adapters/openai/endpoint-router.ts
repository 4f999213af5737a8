// Which of an agent's model endpoints a call goes to, and which are resting.
//
// The rule, kept simple enough to say in one paragraph of the docs: among the endpoints this
// call has not tried yet and that are not cooling down, take those of the smallest priority and
// draw one at random in proportion to its weight. An endpoint that fails `failureThreshold`
// times in a row is left out for `coolDownMs`; after that, the next call that would choose it
// is its one trial (a probe, no second one while it runs): success puts it back, failure cools
// it down again. When every endpoint is cooling down the call still goes somewhere (the one
// whose cool-down ends first): resting all of them would turn a blip into an outage.
//
// The state lives in this object, so in this worker process only: each worker learns about a
// failing endpoint by itself (at most failureThreshold calls each), which needs no shared store.

export interface RoutedEndpoint {
  readonly name: string;
  readonly priority: number;
  readonly weight: number;
}

export interface RouterSettings {
  failureThreshold: number;
  coolDownMs: number;
}

interface Health {
  /** Failures in a row since the last success (or the last cool-down). */
  failures: number;
  /** Set while cooling down, and after it until a probe succeeds. */
  coolUntil: number | undefined;
  /** A trial call is running: no other call may probe this endpoint meanwhile. */
  probing: boolean;
}

export interface EndpointChoice<E> {
  endpoint: E;
  /** The call is the trial of an endpoint that was cooled down. */
  probe: boolean;
}

export class EndpointRouter<E extends RoutedEndpoint> {
  private readonly health = new Map<E, Health>();

  constructor(
    readonly endpoints: readonly E[],
    private readonly settings: RouterSettings,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {
    for (const endpoint of endpoints) this.health.set(endpoint, { failures: 0, coolUntil: undefined, probing: false });
  }

  /** How long a cooled-down endpoint is left out. */
  get coolDownMs(): number {
    return this.settings.coolDownMs;
  }

  /** The endpoint for the next call of a round that already tried `tried`; undefined when none is left. */
  pick(tried: ReadonlySet<E>): EndpointChoice<E> | undefined {
    const now = this.now();
    const untried = this.endpoints.filter((endpoint) => !tried.has(endpoint));
    const open = untried.filter((endpoint) => {
      const health = this.state(endpoint);
      return health.coolUntil === undefined || (health.coolUntil <= now && !health.probing);
    });
    if (open.length === 0) {
      // Only at the start of a round: a call that fell back through the open endpoints does not
      // go on into the resting ones (the retry policy decides about another round).
      if (tried.size > 0 || untried.length === 0) return undefined;
      const soonest = [...untried].sort((a, b) => (this.state(a).coolUntil ?? 0) - (this.state(b).coolUntil ?? 0))[0] as E;
      return { endpoint: soonest, probe: false };
    }
    const best = Math.min(...open.map((endpoint) => endpoint.priority));
    const endpoint = this.draw(open.filter((candidate) => candidate.priority === best));
    const health = this.state(endpoint);
    const probe = health.coolUntil !== undefined;
    if (probe) health.probing = true;
    return { endpoint, probe };
  }

  /** The endpoint answered (a reply, however it ended): it is healthy. */
  succeeded(endpoint: E): void {
    const health = this.state(endpoint);
    health.failures = 0;
    health.coolUntil = undefined;
    health.probing = false;
  }

  /** The endpoint failed (unreachable, timed out, 429, 5xx, stream cut); true when this cooled it down. */
  failed(endpoint: E): boolean {
    const health = this.state(endpoint);
    const wasProbe = health.probing;
    health.probing = false;
    health.failures += 1;
    if (!wasProbe && health.failures < this.settings.failureThreshold) return false;
    health.failures = 0;
    health.coolUntil = this.now() + this.settings.coolDownMs;
    return true;
  }

  /** The call ended without saying anything about the endpoint (canceled, refused as a bad request): a probe may run again. */
  released(endpoint: E): void {
    this.state(endpoint).probing = false;
  }

  /** Cooling down now (for tests and status): not chosen unless every endpoint is. */
  coolingDown(endpoint: E): boolean {
    const until = this.state(endpoint).coolUntil;
    return until !== undefined && until > this.now();
  }

  private state(endpoint: E): Health {
    const health = this.health.get(endpoint);
    if (health === undefined) throw new Error(`endpoint ${endpoint.name} is not one of this router's`);
    return health;
  }

  private draw(candidates: readonly E[]): E {
    const total = candidates.reduce((sum, endpoint) => sum + endpoint.weight, 0);
    let ticket = this.random() * total;
    for (const endpoint of candidates) {
      ticket -= endpoint.weight;
      if (ticket < 0) return endpoint;
    }
    return candidates[candidates.length - 1] as E;
  }
}
