// The shortest time between two firings of a cron expression, found by analysing its parsed
// fields rather than sampling a few firings: every firing day fires the same times of day (the
// product of the second, minute and hour fields), so the gaps are those between consecutive
// times of one day, and the gap from a day's last time to the next firing day's first. Which
// days fire (day of month, month, weekday, with cron's "either day field" rule, L and #) is
// walked over 28 years of calendar, a full cycle of weekday and date alignments. Daylight-saving
// changes move real time against wall time: the firings of the days around the zone's changes
// of the next year are placed in real time too. Every walk is bounded (at most 86,400 times of
// day, 28 years of days, a year of offsets), whatever the expression; the firer checks each
// firing against the previous one as well, so nothing this analysis cannot foresee (a change
// rule of a later year) fires faster than the minimum.
import { CronExpressionParser, type CronFieldCollection } from 'cron-parser';

const DAY_SECONDS = 86_400;
const DAY_MS = DAY_SECONDS * 1000;
/** 28 years: every weekday falls on every date of every month (leap days included) in this span. */
const CALENDAR_DAYS = 28 * 366;

/** Two consecutive firings closer than the minimum, as found. */
export interface TooClose {
  gapSeconds: number;
  /** Where: the two firings as wall-clock times ("00:41:00 then 00:41:01"), or as instants for a transition. */
  where: string;
}

const clock = (secondOfDay: number): string =>
  [Math.floor(secondOfDay / 3600), Math.floor(secondOfDay / 60) % 60, secondOfDay % 60].map((n) => String(n).padStart(2, '0')).join(':');

/** Seconds of the day at which a firing day fires, ascending. */
function timesOfDay(fields: CronFieldCollection): number[] {
  const times: number[] = [];
  for (const hour of fields.hour.values as number[]) {
    for (const minute of fields.minute.values as number[]) {
      for (const second of fields.second.values as number[]) times.push(hour * 3600 + minute * 60 + second);
    }
  }
  return [...new Set(times)].sort((a, b) => a - b);
}

/** Whether a calendar day fires, by cron-parser's rules for the day-of-month and weekday fields. */
function dayMatcher(fields: CronFieldCollection): (year: number, month: number, day: number) => boolean {
  const months = new Set(fields.month.values as number[]);
  const dom = fields.dayOfMonth;
  const dow = fields.dayOfWeek;
  // The types say number | 'L'; a weekday with L comes as a string like '5L'.
  const dayValues = dom.values as readonly (number | string)[];
  const weekdayValues = dow.values as readonly (number | string)[];
  const days = new Set(dayValues.filter((v): v is number => typeof v === 'number'));
  const weekdays = new Set(weekdayValues.filter((v): v is number => typeof v === 'number').map((v) => v % 7));
  const lastWeekdays = new Set(weekdayValues.filter((v): v is string => typeof v === 'string').map((v) => Number.parseInt(v.charAt(0), 10) % 7));
  const nth = dow.nthDay;
  return (year, month, day) => {
    if (!months.has(month)) return false;
    const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
    const weekday = new Date(Date.UTC(year, month - 1, day)).getUTCDay();
    const matchedDom = days.has(day) || (dom.hasLastChar && day === lastDay);
    const matchedDow =
      (weekdays.has(weekday) && (nth <= 0 || Math.ceil(day / 7) === nth)) || (dow.hasLastChar && day + 7 > lastDay && lastWeekdays.has(weekday));
    if (!dom.isWildcard && !dow.isWildcard) return matchedDom || matchedDow;
    if (!dow.isWildcard) return matchedDow;
    return matchedDom;
  };
}

/**
 * The fewest days between two consecutive firing days that makes a gap below `minSeconds`, when
 * the calendar has such a pair (`span`: seconds from a day's first firing to its last).
 */
function closeDays(fields: CronFieldCollection, fromMs: number, span: number, minSeconds: number): { days: number; on: string } | undefined {
  const fires = dayMatcher(fields);
  const start = new Date(fromMs);
  let previous: number | undefined;
  for (let offset = 0; offset < CALENDAR_DAYS; offset += 1) {
    const date = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + offset));
    if (!fires(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate())) continue;
    if (previous !== undefined && (offset - previous) * DAY_SECONDS - span < minSeconds) {
      return { days: offset - previous, on: date.toISOString().slice(0, 10) };
    }
    previous = offset;
  }
  return undefined;
}

/** A zone's UTC offset change: when, and the offsets (ms) before and after it. */
interface OffsetChange {
  atMs: number;
  beforeMs: number;
  afterMs: number;
}

/** The zone's UTC offset changes in [fromMs, fromMs + a year), each found to the second. */
function offsetChanges(timeZone: string, fromMs: number): OffsetChange[] {
  const format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
  const offsetAt = (ms: number): number => {
    const name = format.formatToParts(ms).find((part) => part.type === 'timeZoneName')?.value ?? '';
    const match = /^GMT([+-])(\d{2}):(\d{2})/.exec(name);
    return match === null ? 0 : (match[1] === '-' ? -1 : 1) * (Number(match[2]) * 3600 + Number(match[3]) * 60) * 1000;
  };
  const step = 6 * 3600 * 1000;
  const changes: OffsetChange[] = [];
  let previous = offsetAt(fromMs);
  for (let t = fromMs + step; t < fromMs + 366 * DAY_MS; t += step) {
    const current = offsetAt(t);
    if (current !== previous) {
      let [before, after] = [t - step, t];
      while (after - before > 1000) {
        const middle = before + Math.floor((after - before) / 2);
        if (offsetAt(middle) === previous) before = middle;
        else after = middle;
      }
      changes.push({ atMs: after, beforeMs: previous, afterMs: current });
    }
    previous = current;
  }
  return changes;
}

/**
 * The firings near each offset change of the coming year, in real time, as cron-parser places
 * them: a wall time that does not exist (skipped forward) or exists twice (set back) is read with
 * the offset before the change. A change forward shortens the gap across it by its size (and
 * moves skipped times next to later ones); a gap that starts or ends further than the minimum
 * plus the change's size from it is not shortened, so only firings that near are placed.
 */
function closeAroundTransitions(fields: CronFieldCollection, times: readonly number[], timeZone: string, fromMs: number, minSeconds: number): TooClose | undefined {
  const fires = dayMatcher(fields);
  for (const change of offsetChanges(timeZone, fromMs)) {
    const realOf = (wallMs: number): number =>
      wallMs - change.beforeMs < change.atMs || wallMs - change.afterMs < change.atMs ? wallMs - change.beforeMs : wallMs - change.afterMs;
    const reach = minSeconds * 1000 + Math.abs(change.afterMs - change.beforeMs) + 1000;
    const fromWall = change.atMs + Math.min(change.beforeMs, change.afterMs) - reach;
    const toWall = change.atMs + Math.max(change.beforeMs, change.afterMs) + reach;
    const instants = new Set<number>();
    for (let dayMs = fromWall - (fromWall % DAY_MS); dayMs <= toWall; dayMs += DAY_MS) {
      const day = new Date(dayMs);
      if (!fires(day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate())) continue;
      for (const second of times) {
        const wall = dayMs + second * 1000;
        if (wall >= fromWall && wall <= toWall) instants.add(realOf(wall));
      }
    }
    const sorted = [...instants].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i += 1) {
      const gap = ((sorted[i] as number) - (sorted[i - 1] as number)) / 1000;
      if (gap < minSeconds) {
        return { gapSeconds: gap, where: `${new Date(sorted[i - 1] as number).toISOString()} then ${new Date(sorted[i] as number).toISOString()}, across a daylight-saving change in ${timeZone}` };
      }
    }
  }
  return undefined;
}

/**
 * Two consecutive firings of a (valid) cron expression closer than `minSeconds`, or undefined
 * when every firing comes at least that long after the one before it.
 */
export function firingsCloserThan(cron: string, timeZone: string, minSeconds: number, fromMs: number = Date.now()): TooClose | undefined {
  const { fields } = CronExpressionParser.parse(cron, { tz: timeZone, strict: false });
  const times = timesOfDay(fields);
  for (let i = 1; i < times.length; i += 1) {
    const gap = (times[i] as number) - (times[i - 1] as number);
    if (gap < minSeconds) return { gapSeconds: gap, where: `${clock(times[i - 1] as number)} then ${clock(times[i] as number)} (${timeZone})` };
  }
  const first = times[0] as number;
  const last = times.at(-1) as number;
  // Only a day's last firing and a later day's first can still be too close.
  if (DAY_SECONDS - (last - first) < minSeconds) {
    const close = closeDays(fields, fromMs, last - first, minSeconds);
    if (close !== undefined) {
      return { gapSeconds: close.days * DAY_SECONDS - (last - first), where: `${clock(last)} then ${clock(first)} ${close.days} day(s) later, e.g. on ${close.on} (${timeZone})` };
    }
  }
  return closeAroundTransitions(fields, times, timeZone, fromMs, minSeconds);
}
