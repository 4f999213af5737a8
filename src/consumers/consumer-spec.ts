// A consumer: who it is (the callers whose traffic counts as its own) and its plan (the limits
// on that traffic), and the model prices its spend is counted at. It is a control-plane resource
// (src/control/resource-kinds.ts) and a configuration section (consumers.<id>); this module holds
// only shapes, so the store, the gate and the meter read one definition.
import { z } from 'zod';
import { consumerInput, consumerMembersSchema, consumerPlanSchema, MAX_CONSUMER_SUBJECTS, type ConsumerPlan, type ConsumerSpec } from '../config/schema/consumers.ts';

// The shape of a consumer is a configuration section (consumers.<id>), written once there.
export { consumerInput, consumerMembersSchema, consumerPlanSchema, MAX_CONSUMER_SUBJECTS, type ConsumerPlan, type ConsumerSpec };

/** A model's prices, per million tokens, in whatever currency the operator bills in. */
export const modelPriceSchema = z.strictObject({
  inputPerMillion: z.number().min(0).max(1e6),
  outputPerMillion: z.number().min(0).max(1e6),
});
export type ModelPrice = z.infer<typeof modelPriceSchema>;

/** An agent's prices by model name (the openai adapter's `prices` option). */
export const modelPricesSchema = z.record(z.string().min(1).max(200), modelPriceSchema).refine((prices) => Object.keys(prices).length <= 100, 'at most 100 models');
export type ModelPrices = z.infer<typeof modelPricesSchema>;

/** What a number of tokens costs at `price`. */
export const costOf = (price: ModelPrice | undefined, inputTokens: number, outputTokens: number): number =>
  price === undefined ? 0 : (inputTokens * price.inputPerMillion + outputTokens * price.outputPerMillion) / 1_000_000;
