// "Did you mean …?" for a name that is not one of the valid ones: the closest valid name by edit
// distance, when it is close enough to be a likely typo (a suggestion far off misleads more
// than none).
import { distance } from 'fastest-levenshtein';

/**
 * The valid name closest to `given`, or undefined when none is within a typo's reach: by
 * default a third of the name, at least 2 edits ("maxTurnAttempt" → "maxTurnAttempts").
 */
export function closestName(given: string, valid: Iterable<string>, maxEdits = Math.max(2, Math.floor(given.length / 3))): string | undefined {
  const lowered = given.toLowerCase();
  let best: { name: string; cost: number } | undefined;
  for (const name of valid) {
    const cost = distance(lowered, name.toLowerCase());
    if (cost <= maxEdits && (best === undefined || cost < best.cost)) best = { name, cost };
  }
  return best?.name;
}
