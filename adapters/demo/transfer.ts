// The demo's transfer skill: charges made as journalled steps against a ledger file that stands
// in for a payment system, each exactly once however often the worker running it dies, and the
// result verified where it took effect.
import { appendFileSync, readFileSync } from 'node:fs';
import type { JsonObject } from '../../src/protocol/types.ts';
import type { AdapterContext, OutcomeVerification, StepOutcome, TurnOutcome } from '../types.ts';
import { pause, throwIfAborted } from './cancelable-wait.ts';
import { splitFirstWord } from './words.ts';

const JSON_MEDIA_TYPE = 'application/json';
export const TRANSFER_DEFAULT_CHARGES = 3;
export const TRANSFER_MAX_CHARGES = 100;
// A charge whose outcome is unknown and absent from the ledger is charged again under a new
// step name; that new step can itself be cut off by another crash. Bounded so a worker that
// keeps dying cannot grow the journal without limit (the turn's attempt limit ends it first).
const TRANSFER_MAX_RECHARGES = 5;

function ledgerHas(ledgerFile: string, key: string): boolean {
  let content: string;
  try {
    content = readFileSync(ledgerFile, 'utf8');
  } catch (error) {
    // No ledger yet means no charge was ever made; any other failure must not read as "absent"
    // (that would charge again), so it fails the turn instead.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  return content.split('\n').includes(key);
}

/** One charge: the ledger line is the side effect; the pause after it is the crash window. */
function charge(ctx: AdapterContext, ledgerFile: string, stepMs: number, name: string): Promise<StepOutcome<JsonObject>> {
  return ctx.step<JsonObject>(name, async ({ idempotencyKey, recordReference }) => {
    // One append(2) of one short line with O_APPEND: atomic between worker processes.
    appendFileSync(ledgerFile, `${idempotencyKey}\n`);
    await recordReference(`ledger:${idempotencyKey}`);
    // A cancel during the pause must not mark the step failed: the charge is committed, and a
    // failed step would be run again by a later attempt. The caller checks the signal after.
    await pause(stepMs, ctx.signal);
    return { charged: idempotencyKey };
  });
}

type ChargeResult = 'charged' | 'replayed' | 'reconciled-charged' | 'recharged';

/**
 * Charge number i exactly once: a journalled result is replayed; an unknown outcome is looked
 * up in the ledger by its idempotency key (present: it took effect, do not repeat it; absent:
 * it never happened, charge under a new step name so the journal keeps both facts).
 */
async function chargeOnce(ctx: AdapterContext, ledgerFile: string, stepMs: number, i: number): Promise<{ result: ChargeResult; line: string; key: string }> {
  let unknowns = 0;
  for (let k = 0; k <= TRANSFER_MAX_RECHARGES; k++) {
    const name = k === 0 ? `charge-${i}` : k === 1 ? `charge-${i}-again` : `charge-${i}-again-${k}`;
    const outcome = await charge(ctx, ledgerFile, stepMs, name);
    throwIfAborted(ctx.signal);
    if (outcome.status === 'done') {
      const key = String(outcome.value.charged);
      if (unknowns > 0) return { result: 'recharged', line: `charge-${i}: unknown, not in the ledger; charged as ${name}`, key };
      return { result: outcome.replayed ? 'replayed' : 'charged', line: `charge-${i}: ${outcome.replayed ? 'replayed' : 'charged'}`, key };
    }
    if (ledgerHas(ledgerFile, outcome.idempotencyKey)) {
      return { result: 'reconciled-charged', line: `${name}: unknown, reconciled as charged (${outcome.reference ?? 'no reference'})`, key: outcome.idempotencyKey };
    }
    unknowns += 1;
  }
  throw new Error(`charge-${i} is still unknown after ${TRANSFER_MAX_RECHARGES} recharges; giving up rather than charging again`);
}

/** The transfer skill: `argument` (its first word) is how many charges to make. */
export async function runTransfer(ctx: AdapterContext, argument: string, stepMs: number, ledgerFile: string | undefined): Promise<TurnOutcome> {
  if (ledgerFile === undefined) return { state: 'rejected', message: 'the transfer skill needs adapterOptions.ledgerFile' };
  const first = splitFirstWord(argument).first;
  const parsed = Number.parseInt(first, 10);
  const total = Number.isFinite(parsed) && parsed >= 1 ? Math.min(parsed, TRANSFER_MAX_CHARGES) : TRANSFER_DEFAULT_CHARGES;
  const counts: Record<ChargeResult, number> = { charged: 0, replayed: 0, 'reconciled-charged': 0, recharged: 0 };
  const lines: string[] = [];
  const keys: string[] = [];
  for (let i = 1; i <= total; i++) {
    const { result, line, key } = await chargeOnce(ctx, ledgerFile, stepMs, i);
    counts[result] += 1;
    lines.push(line);
    keys.push(key);
  }
  throwIfAborted(ctx.signal);
  const summary: JsonObject = {
    charges: total,
    charged: counts.charged,
    replayed: counts.replayed,
    reconciledCharged: counts['reconciled-charged'],
    recharged: counts.recharged,
    attempt: ctx.attempt,
  };
  await ctx.emitArtifact({
    artifactId: 'transfer-report',
    name: 'transfer report',
    parts: [{ text: lines.join('\n') }, { data: summary, mediaType: JSON_MEDIA_TYPE }],
    lastChunk: true,
  });
  return { state: 'completed', message: `transfer finished: ${total} charges`, verification: verifyCharges(ledgerFile, keys) };
}

/** The transfer's result checked where it took effect: each charge in the ledger exactly once. */
function verifyCharges(ledgerFile: string, keys: string[]): OutcomeVerification {
  const lines = readFileSync(ledgerFile, 'utf8').split('\n');
  const occurrences = keys.map((key) => lines.filter((line) => line === key).length);
  const missing = occurrences.filter((n) => n === 0).length;
  const duplicated = occurrences.filter((n) => n > 1).length;
  return {
    verified: missing === 0 && duplicated === 0,
    method: 'each charge looked up in the ledger by its idempotency key',
    evidence: { charges: keys.length, inLedgerOnce: keys.length - missing - duplicated, missing, duplicated },
  };
}
