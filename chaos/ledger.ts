// The ledger file the transfer skill charges (one idempotency key per line, appended by every
// worker process) and what counts as a repeated side effect in it.
import { readFileSync } from 'node:fs';

export function readLedger(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter((line) => line !== '');
  } catch {
    return [];
  }
}

export interface LedgerAnalysis {
  lines: number;
  duplicates: number;
  duplicateKeys: string[];
  doubleCharges: number;
  doubleChargeKeys: string[];
  /** "<taskId>:<turn>:charge-<i>" → the ledger keys that made that charge. */
  charges: Map<string, Set<string>>;
}

/** Finds keys charged twice, and charges made under more than one step name. */
export function analyzeLedger(lines: readonly string[]): LedgerAnalysis {
  const analysis: LedgerAnalysis = { lines: lines.length, duplicates: 0, duplicateKeys: [], doubleCharges: 0, doubleChargeKeys: [], charges: new Map() };
  const seen = new Map<string, number>();
  for (const key of lines) seen.set(key, (seen.get(key) ?? 0) + 1);
  for (const [key, count] of seen) {
    if (count > 1) {
      analysis.duplicates += count - 1;
      analysis.duplicateKeys.push(`${key} ×${count}`);
    }
    // charge-i, charge-i-again, charge-i-again-2 ... are one charge: more than one of them in
    // the ledger means the charge was made twice under different names.
    const base = key.replace(/-again(-\d+)?$/, '');
    const variants = analysis.charges.get(base) ?? new Set<string>();
    variants.add(key);
    analysis.charges.set(base, variants);
  }
  for (const [base, variants] of analysis.charges) {
    if (variants.size > 1) {
      analysis.doubleCharges += variants.size - 1;
      analysis.doubleChargeKeys.push(`${base}: ${[...variants].join(', ')}`);
    }
  }
  return analysis;
}
