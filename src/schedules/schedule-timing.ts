// When a schedule fires: cron expressions (with seconds, optional) in an IANA time zone via
// cron-parser, the library BullMQ's job schedulers use, so both agree on every time.
import { CronExpressionParser } from 'cron-parser';

/** Checks a time zone name; undefined when valid, else why not. */
export function timeZoneProblem(timeZone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return undefined;
  } catch {
    return `"${timeZone}" is not an IANA time zone (such as UTC or Europe/Paris)`;
  }
}

/** Checks a cron expression; undefined when valid, else why not. */
export function cronProblem(cron: string, timeZone: string): string | undefined {
  try {
    CronExpressionParser.parse(cron, { tz: timeZone, strict: false });
    return undefined;
  } catch (error) {
    return `is not a cron expression (${(error as Error).message}); use 5 fields (minute hour day month weekday) or 6 with seconds first`;
  }
}

/** The next `count` firing times after `afterMs`. */
export function nextTimes(cron: string, timeZone: string, afterMs: number, count: number): number[] {
  const iterator = CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date(afterMs) });
  return Array.from({ length: count }, () => iterator.next().getTime());
}

/**
 * Firing times in (afterMs, untilMs], ascending, at most `limit` of the latest; `omitted` counts
 * the earlier ones left out (a schedule down for a year need not list every minute).
 */
export function timesBetween(cron: string, timeZone: string, afterMs: number, untilMs: number, limit: number): { times: number[]; omitted: number } {
  const iterator = CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date(afterMs), endDate: new Date(untilMs + 1) });
  const times: number[] = [];
  let omitted = 0;
  for (let n = 0; n < 1_000_000 && iterator.hasNext(); n += 1) {
    const t = iterator.next().getTime();
    if (t <= afterMs || t > untilMs) continue;
    times.push(t);
    if (times.length > limit) {
      times.shift();
      omitted += 1;
    }
  }
  return { times, omitted };
}
