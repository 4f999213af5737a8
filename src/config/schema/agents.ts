// One agent behind the gateway: adapter, card fields, per-agent limits, input policy, scopes.
import { z } from 'zod';
import { backendLimitsSchema } from './backend-limits.ts';
import { callerIdentitySchema } from './caller-identity.ts';
import { scope } from './scopes.ts';

/** An A2A skill as a card declares it (spec 4.4.5), for agents whose skills are configured. */
const skillSchema = z.strictObject({
  /** Unique within the card; a message may ask for it in metadata `skill`. */
  id: z.string().min(1),
  /** Shown to people. */
  name: z.string().min(1),
  /** What the skill does, for people and orchestrators choosing an agent. */
  description: z.string().min(1),
  /** Keywords. */
  tags: z.array(z.string()).default([]),
  /** Example requests. */
  examples: z.array(z.string()).optional(),
  /** Media types the skill accepts (default: the card's). */
  inputModes: z.array(z.string()).optional(),
  /** Media types the skill produces (default: the card's). */
  outputModes: z.array(z.string()).optional(),
});

/** The organization behind an agent (spec 4.4.2 AgentProvider). */
export const providerSchema = z.strictObject({
  /** Its name. */
  organization: z.string().min(1),
  /** Its website. */
  url: z.string().url(),
});

/** Card fields of one agent; what is not set comes from the top-level agentName… settings and the adapter. */
const agentCardSchema = z.strictObject({
  /** The card's name (default: a downstream agent's own, else agentName for the default agent and the agent's name for the others). */
  name: z.string().min(1).optional(),
  /** The card's description (default: a downstream agent's own, else agentDescription). */
  description: z.string().optional(),
  /** The card's version (default: agentVersion). */
  version: z.string().min(1).optional(),
  /** The adapter's skills (default; a downstream agent's own for the a2a adapter), a list of skills, or "from downstream": a remote agent's own, re-read every cardRefreshSeconds, the card waiting for them. */
  skills: z.union([z.literal('from downstream'), z.array(skillSchema).min(1)]).optional(),
  /** The card's provider (default: agentProvider). */
  provider: providerSchema.optional(),
  /** The card's documentationUrl (default: agentDocumentationUrl). */
  documentationUrl: z.string().url().optional(),
  /** The card's iconUrl (default: agentIconUrl). */
  iconUrl: z.string().url().optional(),
  /** Added to the card's security scheme descriptions: how to get credentials, whom to ask. */
  securityNotes: z.string().min(1).optional(),
  /** How long a card built from what the adapter learns at run time (a downstream agent's name, description, skills) is kept before it is built again. */
  cardRefreshSeconds: z.coerce.number().int().min(5).default(300),
});

/** Per-agent limits; each one not set is the top-level setting of the same name. */
const agentLimitsSchema = z.strictObject({
  /** Tasks of this agent one principal may have queued or running (0 = no cap). */
  maxActiveTasks: z.coerce.number().int().min(0).optional(),
  /** Messages that may wait for one task's running turn (0 = no bound). */
  maxQueuedMessages: z.coerce.number().int().min(0).optional(),
  /** Requests per second one principal may make to this agent (0 = no limit). */
  requestsPerSecond: z.coerce.number().min(0).optional(),
  /** Requests one principal may make to this agent at once after being idle. */
  burst: z.coerce.number().int().min(1).optional(),
  /** Largest request body this agent's endpoints accept. */
  maxBodyBytes: z.coerce.number().int().min(1024).optional(),
  /** A turn of this agent still running this long after it first started fails (0 = none). */
  turnDeadlineMs: z.coerce.number().int().min(0).optional(),
  /** Units a turn of this agent may spend through ctx.budget (0 = no budget). */
  turnBudget: z.coerce.number().min(0).optional(),
  /** Turns of this agent one worker process runs at once. */
  workerConcurrency: z.coerce.number().int().min(1).max(1000).optional(),
  /** Bytes one artifact of this agent's tasks may grow to. */
  maxArtifactBytes: z.coerce.number().int().min(1024).optional(),
  /** Bytes of events one turn of this agent may store. */
  maxTurnOutputBytes: z.coerce.number().int().min(1024).optional(),
  /** Bytes of events all turns of one task of this agent may store together. */
  maxTaskOutputBytes: z.coerce.number().int().min(1024).optional(),
});

/**
 * What happens to a message sent to a task whose turn is queued or running: `enqueue` (it
 * becomes the next turn's input), `reject` (refused, nothing changes) or `interrupt` (the
 * running turn is stopped through the cancel stages and the next turn starts at once with all
 * pending input).
 */
export const INPUT_POLICIES = ['enqueue', 'reject', 'interrupt'] as const;
export type InputPolicy = (typeof INPUT_POLICIES)[number];

/** One agent behind the gateway: its adapter, card, limits and input policy. */
export const agentSchema = z.strictObject({
  /** "demo", "a2a" (a remote A2A agent), "openai" (an OpenAI-compatible model) or a path to an adapter module. */
  adapter: z.string().min(1).default('demo'),
  /** Options handed to its adapter factory. */
  adapterOptions: z.record(z.string(), z.json()).default({}),
  card: agentCardSchema.default(agentCardSchema.parse({})),
  /** What a message to a task whose turn is queued or running does: enqueue, reject or interrupt (docs/agents.md). */
  inputPolicy: z.enum(INPUT_POLICIES).default('enqueue'),
  /** Scopes of which a caller must hold at least one to use this agent, besides the operation's own (operators, a2a:operator or a2a:admin, always may). Empty: every caller. */
  scopes: z.array(scope).default([]),
  limits: agentLimitsSchema.default({}),
  /** What this agent's backend may make a worker read; each bound not set is the top-level backendLimits one. */
  backendLimits: backendLimitsSchema.partial().default({}),
  /** Tell this agent's backend who is calling: a short-lived JWT the gateway signs, on every call to the backend's configured origin (docs/security.md). */
  callerIdentity: callerIdentitySchema.default(callerIdentitySchema.parse({})),
});
export type AgentConfig = z.infer<typeof agentSchema>;
export const AGENT_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
