// ctx.budget: what a turn may spend (turnBudget) and has spent. The total is not kept here
// but in the task hash, added to atomically and fenced by the lease generation, so a worker
// that takes a turn over after a crash continues from what the lost one spent.
import type { TurnBudget } from '../../adapters/types.ts';

/** Rejects the charge that took a turn past its budget; the runner then fails the turn. */
export class TurnBudgetExceededError extends Error {
  constructor(
    readonly spent: number,
    readonly limit: number,
    readonly units: number,
    readonly what: string | undefined,
  ) {
    super(`the turn used ${spent} of its budget of ${limit} units (turnBudget)${what === undefined ? '' : `; the charge that passed it: ${units} for ${what}`}`);
    this.name = 'TurnBudgetExceededError';
  }
}

export class PersistedTurnBudget implements TurnBudget {
  private total: number;
  /**
   * The first charge that passed the limit. Kept apart from the error the adapter saw, so the
   * turn fails even when the adapter caught that error and carried on.
   */
  exceeded: TurnBudgetExceededError | undefined;

  /**
   * @param persist adds units to the stored total and resolves with the new total (fenced).
   * @param onTotal sees every total read back, e.g. to keep the turn record current.
   */
  constructor(
    readonly limit: number | undefined,
    spentBefore: number,
    private readonly persist: (units: number) => Promise<number>,
    private readonly onTotal: (total: number) => void = () => undefined,
  ) {
    this.total = spentBefore;
  }

  spent(): number {
    return this.total;
  }

  async charge(units: number, what?: string): Promise<void> {
    // A negative charge would be a refund that lets a turn spend past its limit.
    if (typeof units !== 'number' || !Number.isFinite(units) || units < 0) {
      throw new RangeError(`A budget charge must be a finite number of units >= 0, got ${String(units)}.`);
    }
    const total = await this.persist(units);
    // Charges not awaited in order may resolve out of order; the stored total only grows.
    this.total = Math.max(this.total, total);
    this.onTotal(this.total);
    if (this.limit !== undefined && total > this.limit) {
      const error = new TurnBudgetExceededError(total, this.limit, units, what);
      this.exceeded ??= error;
      throw error;
    }
  }
}

/** Why a turn that ran out of budget failed, in the style of the other limits' reasons. */
export function budgetReason(turn: number, spent: number, limit: number, crossedBy?: TurnBudgetExceededError): string {
  const charge = crossedBy?.what === undefined ? '' : ` The charge that passed it: ${crossedBy.units} for ${crossedBy.what}.`;
  return `Turn ${turn} ran out of budget: the turn used ${spent} of its budget of ${limit} units (turnBudget), across all the workers that ran it.${charge}`;
}
