// Small, dependency-free statistics helpers shared by the load generators and the report.
// Latencies we collect ourselves (streams) are plain millisecond samples, so a sorted array
// and nearest-rank percentiles are exact and cheap enough for a few hundred thousand samples.

/** Nearest-rank percentile (p in 0..100) of an ascending-sorted array; NaN when empty. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  const index = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[index] as number;
}

/** Percentile of an unsorted sample; copies before sorting so callers keep their order. */
export function percentile(values: readonly number[], p: number): number {
  return percentileSorted([...values].sort((a, b) => a - b), p);
}

/**
 * Median of a small set (e.g. per-round results). Even counts average the two middle values,
 * which treats both servers identically instead of favouring the better or worse round.
 */
export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = Math.floor(finite.length / 2);
  if (finite.length % 2 === 1) return finite[mid] as number;
  return ((finite[mid - 1] as number) + (finite[mid] as number)) / 2;
}

/** Ratio that stays NaN (rendered as "-") instead of Infinity when the denominator is missing. */
export function ratio(numerator: number, denominator: number): number {
  if (!Number.isFinite(numerator) || !Number.isFinite(denominator) || denominator === 0) return Number.NaN;
  return numerator / denominator;
}

/** Rounds for display/JSON without turning NaN into a misleading 0. */
export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return Number.NaN;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
