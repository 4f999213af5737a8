// A worker's side of consumer plans: the model tokens a turn uses, and what they cost at the
// agent's prices, charged to its consumer's usage of the day and month as the turn runs. The
// reply's text is charged as it streams, estimated (ESTIMATED_CHARS_PER_TOKEN); the backend's
// own count (ctx.recordUsage) then replaces the estimate. A charge that takes the consumer past
// its modelTokensPerDay or spendPerMonth stops the turn: the chunk is not stored, the adapter's
// next write is refused, and the task fails naming the plan and the budget. Each charge is one
// script on the consumer's counters, so workers share them and the overshoot is at most the
// charges in flight (one per running turn).
import { noteLimitRefusal } from '../limits/limit-refusal.ts';
import type { JsonObject } from '../protocol/types.ts';
import type { ConsumerStore } from '../store/consumers/consumer-store.ts';
import type { ConsumerDirectory, ResolvedConsumer } from './consumer-directory.ts';
import { costOf, modelPricesSchema, type ModelPrice, type ModelPrices } from './consumer-spec.ts';

/** Where a backend reports no usage, a token is taken for this many characters of text. */
export const ESTIMATED_CHARS_PER_TOKEN = 4;

const estimateTokens = (chars: number): number => Math.ceil(chars / ESTIMATED_CHARS_PER_TOKEN);

export type BudgetName = 'modelTokensPerDay' | 'spendPerMonth';

/** A turn ran its consumer past a budget: the turn fails with this message. */
export class ConsumerBudgetError extends Error {
  override readonly name = 'ConsumerBudgetError';

  constructor(
    readonly consumer: ResolvedConsumer,
    readonly budget: BudgetName,
    readonly used: number,
  ) {
    const limit = consumer.limits[budget];
    const what = budget === 'modelTokensPerDay' ? `${used} model tokens today (UTC)` : `a spend of ${used} this month (UTC)`;
    const again = budget === 'modelTokensPerDay' ? 'the next UTC day' : 'the next UTC month';
    super(
      `Consumer "${consumer.id}" reached the limit ${budget} ${limit} of its plan "${consumer.plan}": it has used ${what}. The turn stopped at the limit; the budget starts again ${again}, or ask an admin for a larger plan.`,
    );
    noteLimitRefusal(`consumer.${budget}`);
  }
}

export const isConsumerBudgetError = (error: unknown): error is ConsumerBudgetError => error instanceof ConsumerBudgetError;

/** What a turn reports of its tokens (ctx.recordUsage). */
export interface MeteredUsage {
  model?: string | undefined;
  inputTokens: number;
  outputTokens: number;
}

/** One turn's meter. */
export class TurnMeter {
  /** The first charge past a budget (kept: the turn fails with it even if the adapter caught it). */
  exceeded: ConsumerBudgetError | undefined;
  /** Estimated since the backend last reported its own count: replaced by that count. */
  private estimatedIn = 0;
  private estimatedOutChars = 0;
  private estimatedSpend = 0;

  constructor(
    private readonly consumer: ResolvedConsumer,
    private readonly store: ConsumerStore,
    private readonly prices: ModelPrices,
    private readonly model: string | undefined,
  ) {}

  private priceOf(model: string | undefined): ModelPrice | undefined {
    return (model === undefined ? undefined : this.prices[model]) ?? (this.model === undefined ? undefined : this.prices[this.model]);
  }

  /** Charges the turn's input (estimated from its text): the error when the budget is already spent. */
  async start(inputChars: number): Promise<ConsumerBudgetError | undefined> {
    const tokens = estimateTokens(inputChars);
    const spend = costOf(this.priceOf(undefined), tokens, 0);
    this.estimatedIn += tokens;
    this.estimatedSpend += spend;
    const totals = await this.store.charge(this.consumer.id, tokens, 0, spend);
    // Spent before this turn: no room even for its first token.
    const before = { tokensToday: totals.tokensToday - tokens, spendThisMonth: totals.spendThisMonth - spend };
    return this.check(totals, before);
  }

  /** Charges streamed reply text (estimated); throws when it takes the consumer past a budget. */
  async chargeOutput(chars: number): Promise<void> {
    if (chars <= 0) return;
    const tokens = estimateTokens(this.estimatedOutChars + chars) - estimateTokens(this.estimatedOutChars);
    this.estimatedOutChars += chars;
    const spend = costOf(this.priceOf(undefined), 0, tokens);
    this.estimatedSpend += spend;
    this.throwIfOver(this.check(await this.store.charge(this.consumer.id, 0, tokens, spend)));
  }

  /** The backend's own count: it replaces what was estimated since the last one. */
  async reconcile(usage: MeteredUsage): Promise<void> {
    const spend = costOf(this.priceOf(usage.model), usage.inputTokens, usage.outputTokens);
    const deltaIn = usage.inputTokens - this.estimatedIn;
    const deltaOut = usage.outputTokens - estimateTokens(this.estimatedOutChars);
    const deltaSpend = spend - this.estimatedSpend;
    this.estimatedIn = 0;
    this.estimatedOutChars = 0;
    this.estimatedSpend = 0;
    this.throwIfOver(this.check(await this.store.charge(this.consumer.id, deltaIn, deltaOut, deltaSpend)));
  }

  private check(totals: { tokensToday: number; spendThisMonth: number }, reachedBefore?: { tokensToday: number; spendThisMonth: number }): ConsumerBudgetError | undefined {
    const { modelTokensPerDay, spendPerMonth } = this.consumer.limits;
    const past = (total: number, before: number | undefined, limit: number): boolean => limit > 0 && (total > limit || (before !== undefined && before >= limit));
    let error: ConsumerBudgetError | undefined;
    if (past(totals.tokensToday, reachedBefore?.tokensToday, modelTokensPerDay)) error = new ConsumerBudgetError(this.consumer, 'modelTokensPerDay', totals.tokensToday);
    else if (past(totals.spendThisMonth, reachedBefore?.spendThisMonth, spendPerMonth)) {
      error = new ConsumerBudgetError(this.consumer, 'spendPerMonth', Math.round(totals.spendThisMonth * 1e6) / 1e6);
    }
    this.exceeded ??= error;
    return error;
  }

  private throwIfOver(error: ConsumerBudgetError | undefined): void {
    if (error !== undefined) throw error;
  }
}

/** The adapters whose turns call a model (the others' output is no model's tokens). */
const MODEL_ADAPTERS = new Set(['openai']);

/** Makes the meter of each turn whose owner is a consumer's. */
export class ConsumerMeters {
  constructor(
    private readonly directory: ConsumerDirectory,
    private readonly store: ConsumerStore,
  ) {}

  /**
   * The turn's meter, or undefined when its owner (tenant, subject) is no consumer's or its agent
   * calls no model: an agent of a model adapter, or one whose options give `prices`.
   */
  forTurn(tenant: string, subject: string, agent: { adapter: string; adapterOptions: JsonObject } | undefined): TurnMeter | undefined {
    if (agent === undefined || !(MODEL_ADAPTERS.has(agent.adapter) || agent.adapterOptions.prices !== undefined)) return undefined;
    const consumer = this.directory.resolve(tenant, subject);
    if (consumer === undefined) return undefined;
    const { adapterOptions } = agent;
    const prices = modelPricesSchema.safeParse(adapterOptions.prices ?? {});
    const model = typeof adapterOptions.model === 'string' ? adapterOptions.model : undefined;
    return new TurnMeter(consumer, this.store, prices.success ? prices.data : {}, model);
  }
}
