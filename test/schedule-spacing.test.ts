// The shortest gap between firings of a cron expression (schedules.minIntervalSeconds), from a
// fixed date so every case is deterministic: gaps within a day, from a day's last firing to the
// next firing day's first (day of month, weekday, L, #, cron's either-day rule), and across
// daylight-saving changes as cron-parser places the firings.
import { describe, expect, it } from 'vitest';
import { CronExpressionParser } from 'cron-parser';
import { firingsCloserThan } from '../src/schedules/cron-spacing.ts';

const FROM = Date.parse('2026-01-15T12:00:00Z');
const DAY = 86_400;

/** The shortest gap between consecutive real firings in a window, walked with cron-parser itself. */
function walkedShortestGap(cron: string, timeZone: string, fromIso: string, toIso: string): number {
  const iterator = CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date(fromIso), endDate: new Date(toIso) });
  let previous: number | undefined;
  let shortest = Number.POSITIVE_INFINITY;
  while (iterator.hasNext()) {
    const t = iterator.next().getTime();
    if (previous !== undefined) shortest = Math.min(shortest, (t - previous) / 1000);
    previous = t;
  }
  return shortest;
}

describe('firings closer than the minimum', () => {
  it.each([
    ['* 41,43 * * * *', 1],
    ['*/5 * * * * *', 5],
    ['0,30 * * * * *', 30],
    ['0 0,1 * * * *', 60],
  ])('%s fires %i s apart within a day', (cron, gap) => {
    expect(firingsCloserThan(cron, 'UTC', gap + 1, FROM)).toMatchObject({ gapSeconds: gap });
    expect(firingsCloserThan(cron, 'UTC', gap, FROM)).toBeUndefined();
  });

  it.each(['0 */5 * * * *', '0 0 * * *', '0 0 9 * * MON-FRI', '0 * * * * *', '@hourly'])('%s never fires within 60 s of the firing before', (cron) => {
    expect(firingsCloserThan(cron, 'Europe/Paris', 60, FROM)).toBeUndefined();
  });

  it("checks a day's last firing against the next firing day's first, only where two firing days follow each other", () => {
    expect(firingsCloserThan('0 0,59 0,23 * * *', 'UTC', 120, FROM)).toMatchObject({ gapSeconds: 60 });
    expect(firingsCloserThan('0 0,59 0,23 * * 1', 'UTC', 120, FROM)).toBeUndefined();
    expect(firingsCloserThan('0 0,59 0,23 * * 1,2', 'UTC', 120, FROM)).toMatchObject({ gapSeconds: 60 });
    // The 13th, or any Friday (cron's either-day rule): a Friday the 12th is followed by the 13th.
    expect(firingsCloserThan('0 0,59 0,23 13 * 5', 'UTC', 120, FROM)).toMatchObject({ gapSeconds: 60 });
    expect(firingsCloserThan('0 0,59 0,23 13 * *', 'UTC', 120, FROM)).toBeUndefined();
    // The last day of a month and the 1st of the next.
    expect(firingsCloserThan('0 0,59 0,23 1,L * *', 'UTC', 120, FROM)).toMatchObject({ gapSeconds: 60 });
    // February 29th and March 1st follow each other in leap years only, within the 28 years walked.
    expect(firingsCloserThan('0 0,59 0,23 29 2 *', 'UTC', 120, FROM)).toBeUndefined();
    expect(firingsCloserThan('0 0,59 0,23 1,29 2,3 *', 'UTC', 120, FROM)).toMatchObject({ gapSeconds: 60 });
    // The third Friday, and the last Friday, of a month: never two days in a row.
    expect(firingsCloserThan('0 0,59 0,23 * * 5#3', 'UTC', 120, FROM)).toBeUndefined();
    expect(firingsCloserThan('0 0,59 0,23 * * 5L', 'UTC', 120, FROM)).toBeUndefined();
  });

  it('minimums of days: daily, weekly, monthly', () => {
    expect(firingsCloserThan('0 0 * * *', 'UTC', 7 * DAY, FROM)).toMatchObject({ gapSeconds: DAY });
    expect(firingsCloserThan('0 0 * * 1', 'UTC', 7 * DAY, FROM)).toBeUndefined();
    expect(firingsCloserThan('0 0 1 * *', 'UTC', 28 * DAY, FROM)).toBeUndefined();
    expect(firingsCloserThan('0 0 1 * *', 'UTC', 29 * DAY, FROM)).toMatchObject({ gapSeconds: 28 * DAY });
  });

  it('places firings across daylight-saving changes as cron-parser does', () => {
    // Europe/Paris springs forward on 2026-03-29 (02:00 → 03:00): 01:30 and 03:30 are an hour apart.
    expect(firingsCloserThan('0 30 1,3 * * *', 'Europe/Paris', 5_400, FROM)).toMatchObject({ gapSeconds: 3_600 });
    expect(walkedShortestGap('0 30 1,3 * * *', 'Europe/Paris', '2026-03-28T12:00:00Z', '2026-03-30T12:00:00Z')).toBe(3_600);
    // A daily firing is 23 h after the one before on that day.
    expect(firingsCloserThan('0 30 2 * * *', 'Europe/Paris', DAY, FROM)).toMatchObject({ gapSeconds: 23 * 3_600 });
    expect(walkedShortestGap('0 30 2 * * *', 'Europe/Paris', '2026-03-27T12:00:00Z', '2026-03-31T12:00:00Z')).toBe(23 * 3_600);
    expect(firingsCloserThan('0 30 2 * * *', 'Europe/Paris', 23 * 3_600, FROM)).toBeUndefined();
    // Setting clocks back only lengthens gaps; UTC has no changes.
    expect(firingsCloserThan('0 30 1,3 * * *', 'UTC', 7_200, FROM)).toBeUndefined();
    // A weekly firing at 02:30 on Sundays: the week of the change is an hour short.
    expect(firingsCloserThan('0 30 2 * * 0', 'Europe/Paris', 7 * DAY - 1_800, FROM)).toMatchObject({ gapSeconds: 7 * DAY - 3_600 });
    // Lord Howe moves by half an hour.
    expect(firingsCloserThan('0 0 * * * *', 'Australia/Lord_Howe', 3_600, FROM)).toMatchObject({ gapSeconds: 1_800 });
    expect(firingsCloserThan('0 0 * * * *', 'Australia/Lord_Howe', 1_800, FROM)).toBeUndefined();
  });

  it('agrees with cron-parser walking a year of a few expressions', () => {
    for (const [cron, timeZone] of [
      ['0 15 10 * * 1-5', 'America/New_York'],
      ['0 0 12 L * *', 'UTC'],
      ['0 0,45 8,17 1,15 * 1', 'Europe/Paris'],
    ] as const) {
      const walked = walkedShortestGap(cron, timeZone, '2026-01-15T12:00:00Z', '2027-01-15T12:00:00Z');
      expect(firingsCloserThan(cron, timeZone, walked, FROM), cron).toBeUndefined();
      expect(firingsCloserThan(cron, timeZone, walked + 1, FROM)?.gapSeconds, cron).toBe(walked);
    }
  });
});
