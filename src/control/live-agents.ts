// Agents written through the admin API take effect like those of the configuration file: after
// each change of the view, every process adds the new stored agents (its adapter loaded), replaces
// those whose definition changed, and removes the deleted ones; the gateway then rebuilds that
// agent's endpoint and cards, a worker starts or keeps its turn queue's worker (each role's
// hooks). One instance per Agents, so a process with both roles loads each agent once. Changes
// are applied one at a time, in order, so a quick put-then-delete never ends with the agent
// present. An agent whose adapter fails to load is left out (its previous definition, if
// any, stays) and logged: the write was validated, so this is the backend refusing its options.
import type { Agent, Agents } from '../agents/agents.ts';
import type { AgentConfig } from '../config/schema.ts';
import type { Logger } from '../logging/logger.ts';
import type { ControlView } from './control-view.ts';

export interface AgentChangeHooks {
  /** An agent was added or replaced (`agent` is the new one). */
  added?(agent: Agent): void | Promise<void>;
  /** An agent was removed. */
  removed?(name: string): void | Promise<void>;
}

export interface LiveAgentsSetup {
  view: ControlView;
  agents: Agents;
  /** The configuration file's agents: never touched here (a stored one of the same name is left out). */
  configuredNames: readonly string[];
  logger: Logger;
}

/** The reason a removed agent's queued turns fail with. */
export const removalReason = (name: string): string =>
  `Agent "${name}" was deleted through the admin API before this turn ran, so it was not run. Send the message to another agent.`;

export interface LiveAgents {
  /** Calls `hooks` for each stored agent applied so far, then for every later change. */
  subscribe(hooks: AgentChangeHooks): void;
  /** Resolves once every change seen so far is applied (a write's answer waits for it). */
  settled(): Promise<void>;
}

/** One per Agents: a process running gateway and worker roles loads each stored agent once, for both. */
const connected = new WeakMap<Agents, LiveAgents>();

export function connectLiveAgents(setup: LiveAgentsSetup): LiveAgents {
  const existing = connected.get(setup.agents);
  if (existing !== undefined) return existing;
  const { view, agents, logger } = setup;
  const subscribers: AgentChangeHooks[] = [];
  /** Name → the definition in effect (as JSON), for the stored agents applied here. */
  const applied = new Map<string, string>();
  let chain: Promise<void> = Promise.resolve();
  const each = async (call: (hooks: AgentChangeHooks) => void | Promise<void> | undefined): Promise<void> => {
    for (const hooks of subscribers) {
      try {
        await call(hooks);
      } catch (error) {
        logger.error('applying an agent change failed in one role', { error: (error as Error).message });
      }
    }
  };
  const apply = async (wanted: Map<string, AgentConfig>): Promise<void> => {
    for (const name of [...applied.keys()]) {
      if (wanted.has(name)) continue;
      agents.remove(name, removalReason(name));
      applied.delete(name);
      await each((hooks) => hooks.removed?.(name));
      logger.info('agent removed (admin API)', { agent: name });
    }
    for (const [name, definition] of wanted) {
      const text = JSON.stringify(definition);
      if (applied.get(name) === text) continue;
      let agent: Agent;
      try {
        agent = await agents.loadDefined(name, definition);
      } catch (error) {
        logger.error('an agent written through the admin API could not be loaded; it is left out until it is changed', { agent: name, error: (error as Error).message });
        continue;
      }
      agents.put(agent);
      applied.set(name, text);
      await each((hooks) => hooks.added?.(agent));
      logger.info('agent applied (admin API)', { agent: name, adapter: definition.adapter });
    }
  };
  const enqueue = (step: () => Promise<void>): void => {
    chain = chain.then(step).catch((error: Error) => logger.error('applying the stored agents failed', { error: error.message }));
  };
  const live: LiveAgents = {
    subscribe(hooks) {
      enqueue(async () => {
        subscribers.push(hooks);
        for (const name of applied.keys()) {
          const agent = agents.get(name);
          if (agent !== undefined) await hooks.added?.(agent);
        }
      });
    },
    settled: () => chain,
  };
  connected.set(agents, live);
  view.onChange(() => {
    const wanted = new Map<string, AgentConfig>();
    for (const resource of view.list('agents')) {
      if (setup.configuredNames.includes(resource.name)) {
        logger.warn('a stored agent has the name of a configured agent and is left out; delete it through the admin API', { agent: resource.name });
        continue;
      }
      wanted.set(resource.name, resource.spec);
    }
    enqueue(() => apply(wanted));
  });
  return live;
}
