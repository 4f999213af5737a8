// The built-in demo agent: deterministic and offline, so the gateway can be tried, tested and
// benchmarked without any model or network. Each skill exercises one part of the protocol:
// a plain completion (echo), a chunked artifact stream (stream), an interrupted multi-turn
// task (dialogue), a long cancelable turn with progress (long) and journalled side effects
// that survive a crash without being repeated (transfer), and a coordinator that fans work out
// to sub-agents and has a reviewer judge their results (fanout, review).
//
// The adapter keeps no state of its own: anything a later turn needs is derived from the
// context (history, input), because a turn may run in any worker process and be retried.
import type { AgentSkill, JsonObject, Message, Part } from '../../src/protocol/types.ts';
import type { Adapter, AdapterContext, TurnOutcome } from '../types.ts';
import { sleep, throwIfAborted } from './cancelable-wait.ts';
import { FANOUT_SKILLS, runFanout, runReview } from './fanout.ts';
import { runTransfer, TRANSFER_DEFAULT_CHARGES, TRANSFER_MAX_CHARGES } from './transfer.ts';
import { messageText, splitFirstWord } from './words.ts';

export interface DemoAdapterOptions {
  /** Delay between stream chunks, between long-running steps and after each transfer charge, in milliseconds. */
  stepMs?: number;
  /**
   * File standing in for a payment system: the transfer skill appends one line (the step's
   * idempotency key) per charge. Shared by every worker process; without it transfer is refused.
   */
  ledgerFile?: string;
}

type SkillId = 'echo' | 'stream' | 'dialogue' | 'long' | 'transfer' | 'fanout' | 'review';

const TEXT = 'text/plain';
const JSON_MEDIA = 'application/json';

const DEFAULT_STEP_MS = 50;
const DEFAULT_PANGRAM = 'The quick brown fox jumps over the lazy dog';
const DIALOGUE_QUESTION = 'What is your name?';
const LONG_DEFAULT_STEPS = 10;
const LONG_MAX_STEPS = 1000;
const SKILLS: readonly AgentSkill[] = [
  {
    id: 'echo',
    name: 'Echo',
    description:
      'Returns the parts of the input message unchanged as one artifact and completes at once. ' +
      'Used when no other skill is named.',
    tags: ['demo', 'echo', 'test'],
    examples: ['hello world', 'echo this back to me'],
    inputModes: [TEXT, JSON_MEDIA],
    outputModes: [TEXT, JSON_MEDIA],
  },
  {
    id: 'stream',
    name: 'Stream words',
    description:
      'Streams the given text back one word per artifact chunk, with a short pause between chunks. ' +
      'Without text it streams a pangram.',
    tags: ['demo', 'streaming', 'artifact'],
    examples: ['stream the quick brown fox', 'stream'],
    inputModes: [TEXT],
    outputModes: [TEXT],
  },
  {
    id: 'dialogue',
    name: 'Greeting dialogue',
    description:
      'Asks for your name (the task enters input-required), then greets you by that name in an ' +
      'artifact and completes.',
    tags: ['demo', 'multi-turn', 'input-required'],
    examples: ['dialogue'],
    inputModes: [TEXT],
    outputModes: [TEXT],
  },
  {
    id: 'long',
    name: 'Long-running job',
    description:
      `Runs n steps (default ${LONG_DEFAULT_STEPS}, at most ${LONG_MAX_STEPS}), reporting progress ` +
      'after each one, then returns a report artifact. Each step costs one unit of the turn budget, if one is set. ' +
      'Can be canceled at any time.',
    tags: ['demo', 'long-running', 'progress', 'cancel'],
    examples: ['long', 'long 100'],
    inputModes: [TEXT],
    outputModes: [TEXT],
  },
  {
    id: 'transfer',
    name: 'Ledger transfer',
    description:
      `Makes n charges (default ${TRANSFER_DEFAULT_CHARGES}, at most ${TRANSFER_MAX_CHARGES}) on a ledger file, each a ` +
      'journalled step keyed by its idempotency key; after a crash, finished charges are not repeated and ' +
      'interrupted ones are reconciled with the ledger. Reports what happened to each charge. Needs the ' +
      'adapter option ledgerFile.',
    tags: ['demo', 'side-effects', 'step-journal', 'recovery'],
    examples: ['transfer', 'transfer 5'],
    inputModes: [TEXT],
    outputModes: [TEXT, JSON_MEDIA],
  },
  ...FANOUT_SKILLS,
];

const SKILL_IDS: ReadonlySet<string> = new Set(SKILLS.map((s) => s.id));

function isSkillId(value: string): value is SkillId {
  return SKILL_IDS.has(value);
}

/** The text of a message: its text parts concatenated (non-text parts contribute nothing). */
function skillArgument(ctx: AdapterContext, skill: SkillId): string {
  const text = messageText(ctx.input[0]);
  const { first, rest } = splitFirstWord(text);
  return first === skill ? rest.trim() : text.trim();
}

/**
 * Whether the previous turn of this task started the dialogue and is waiting for the answer.
 * Derived from history because the adapter has no storage of its own: either the most recent
 * agent message is the question, or the most recent user message started the dialogue.
 */
function dialogueAwaitingAnswer(history: readonly Message[]): boolean {
  for (let i = history.length - 1; i >= 0; i--) {
    const message = history[i];
    if (!message) continue;
    if (message.role === 'ROLE_AGENT') {
      if (messageText(message).trim() === DIALOGUE_QUESTION) return true;
      // Other agent messages (progress, etc.) do not settle the question; keep looking back
      // for the user message that started this exchange.
      continue;
    }
    return startsDialogue(message);
  }
  return false;
}

function startsDialogue(message: Message): boolean {
  return message.metadata?.['skill'] === 'dialogue' || splitFirstWord(messageText(message)).first === 'dialogue';
}

type Selection = { kind: 'skill'; skill: SkillId } | { kind: 'dialogue-answer' } | { kind: 'unknown'; requested: string };

function selectSkill(ctx: AdapterContext): Selection {
  const requested = ctx.requestedSkill;
  const firstWord = splitFirstWord(messageText(ctx.input[0])).first;

  // A follow-up to the dialogue's question usually carries only the answer ("Ada"), so it must
  // be recognized before keyword matching, which would otherwise route it to echo. An explicit
  // request for another skill, or a fresh "dialogue", still wins.
  if ((requested === undefined || requested === 'dialogue') && firstWord !== 'dialogue') {
    if (ctx.turn > 1 && dialogueAwaitingAnswer(ctx.history)) return { kind: 'dialogue-answer' };
  }

  if (requested !== undefined) {
    return isSkillId(requested) ? { kind: 'skill', skill: requested } : { kind: 'unknown', requested };
  }
  if (isSkillId(firstWord)) return { kind: 'skill', skill: firstWord };
  return { kind: 'skill', skill: 'echo' };
}

function copyPart(part: Part): Part {
  // Copied so later mutation of the input (by the runtime or a test) cannot alter the artifact.
  return structuredClone(part);
}

async function runEcho(ctx: AdapterContext): Promise<TurnOutcome> {
  const parts = ctx.input.flatMap((m) => m.parts.map(copyPart));
  // An artifact needs at least one part to be meaningful to clients.
  if (parts.length === 0) parts.push({ text: '' });
  // Not awaited: the runtime stores every emit, in order, before the final status, and a refused
  // one fails the turn. Returning at once lets the final status go out behind the artifact
  // without waiting for its answer (one round trip less per task).
  ctx.emitArtifact({ artifactId: 'echo', name: 'echo', parts, lastChunk: true }).catch(() => undefined);
  return { state: 'completed', message: 'echo complete' };
}

async function runStream(ctx: AdapterContext, stepMs: number): Promise<TurnOutcome> {
  const arg = skillArgument(ctx, 'stream');
  const words = (arg === '' ? DEFAULT_PANGRAM : arg).split(/\s+/).filter((w) => w !== '');
  for (let i = 0; i < words.length; i++) {
    if (i > 0) await sleep(stepMs, ctx.signal);
    throwIfAborted(ctx.signal);
    // Later words carry their separating space so that the appended text parts read as the
    // original sentence when a client concatenates them.
    const text = i === 0 ? (words[i] ?? '') : ` ${words[i] ?? ''}`;
    await ctx.emitArtifact({
      artifactId: 'stream',
      name: 'stream',
      parts: [{ text }],
      append: i > 0,
      lastChunk: i === words.length - 1,
    });
  }
  throwIfAborted(ctx.signal);
  return { state: 'completed', message: `streamed ${words.length} words` };
}

async function runDialogueStart(ctx: AdapterContext): Promise<TurnOutcome> {
  throwIfAborted(ctx.signal);
  return { state: 'input-required', message: DIALOGUE_QUESTION };
}

async function runDialogueAnswer(ctx: AdapterContext): Promise<TurnOutcome> {
  // Several follow-ups may have queued up before this turn ran; together they are the answer.
  const answer = ctx.input.map((m) => messageText(m).trim()).filter((t) => t !== '').join(' ');
  if (answer === '') return { state: 'input-required', message: DIALOGUE_QUESTION };
  throwIfAborted(ctx.signal);
  // Not awaited, as echo's: the greeting is stored before the final status all the same, and
  // goes out with it in one call.
  ctx.emitArtifact({ artifactId: 'greeting', name: 'greeting', parts: [{ text: `Hello, ${answer}!` }], lastChunk: true }).catch(() => undefined);
  return { state: 'completed', message: 'greeted' };
}

function parseStepCount(arg: string): number {
  const first = splitFirstWord(arg).first;
  const n = Number.parseInt(first, 10);
  if (!Number.isFinite(n) || n < 1) return LONG_DEFAULT_STEPS;
  return Math.min(n, LONG_MAX_STEPS);
}

async function runLong(ctx: AdapterContext, stepMs: number): Promise<TurnOutcome> {
  const total = parseStepCount(skillArgument(ctx, 'long'));
  const started = Date.now();
  // A retried attempt (ctx.attempt > 1) simply redoes every step: the demo's steps have no
  // external effects, so repeating them is harmless and keeps the adapter stateless.
  for (let i = 1; i <= total; i++) {
    await sleep(stepMs, ctx.signal);
    throwIfAborted(ctx.signal);
    // One unit per step, charged before the step counts as done: with turnBudget 5, step 6
    // fails the turn. Without a budget there is nothing to account for, and a charge per step
    // would be a write per step. A context built by hand (unit tests) may have no budget.
    if (ctx.budget?.limit !== undefined) await ctx.budget.charge(1, `step ${i}`);
    await ctx.recordStep(`step-${i}`);
    throwIfAborted(ctx.signal);
    const progress: JsonObject = { progress: i, total };
    await ctx.emitStatus(`progress ${i}/${total}`, progress);
  }
  throwIfAborted(ctx.signal);
  const elapsed = Date.now() - started;
  await ctx.emitArtifact({
    artifactId: 'report',
    name: 'report',
    parts: [{ text: `Completed ${total} steps in ${elapsed} ms (attempt ${ctx.attempt}).` }],
    lastChunk: true,
  });
  return { state: 'completed', message: `long job finished: ${total} steps` };
}

export function createDemoAdapter(options: DemoAdapterOptions = {}): Adapter {
  const stepMs = options.stepMs ?? DEFAULT_STEP_MS;
  if (!Number.isFinite(stepMs) || stepMs < 0) {
    throw new Error(`demo adapter: stepMs must be a non-negative number, got ${String(options.stepMs)}`);
  }
  const ledgerFile = options.ledgerFile;
  if (ledgerFile !== undefined && (typeof ledgerFile !== 'string' || ledgerFile === '')) {
    throw new Error(`demo adapter: ledgerFile must be a non-empty path, got ${JSON.stringify(ledgerFile)}`);
  }
  return {
    name: 'demo',
    version: '1.0.0',
    // Fresh copies so a caller that edits the card's skills cannot change another adapter's.
    // Side effects on a ledger are described to authenticated callers only (the extended card).
    skills: structuredClone(SKILLS.filter((s) => s.id !== 'transfer')),
    extendedSkills: structuredClone(SKILLS.filter((s) => s.id === 'transfer')),
    defaultInputModes: [TEXT, JSON_MEDIA],
    defaultOutputModes: [TEXT, JSON_MEDIA],
    async run(ctx: AdapterContext): Promise<TurnOutcome> {
      const selection = selectSkill(ctx);
      if (selection.kind === 'unknown') {
        return {
          state: 'rejected',
          message: `unknown skill "${selection.requested}"; available: ${[...SKILL_IDS].join(', ')}`,
        };
      }
      if (selection.kind === 'dialogue-answer') return runDialogueAnswer(ctx);
      switch (selection.skill) {
        case 'echo':
          return runEcho(ctx);
        case 'stream':
          return runStream(ctx, stepMs);
        case 'dialogue':
          return runDialogueStart(ctx);
        case 'long':
          return runLong(ctx, stepMs);
        case 'transfer':
          return runTransfer(ctx, skillArgument(ctx, 'transfer'), stepMs, ledgerFile);
        case 'fanout':
          return runFanout(ctx, skillArgument(ctx, 'fanout'));
        case 'review':
          return runReview(ctx);
      }
    },
  };
}
