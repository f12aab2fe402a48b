/**
 * Reminder (chase) rules as pure functions: when each reminder of a series falls due, the client's
 * quiet hours and preferred time, when a series stops, and when bounces stall an intake.
 * No I/O: times are epoch milliseconds, time zones IANA names.
 */

export const CHASE_SCHEDULES = ['default', 'gentle', 'aggressive', 'custom', 'off'] as const;
export type ChaseScheduleName = (typeof CHASE_SCHEDULES)[number];
export const CHASE_CHANNELS = ['email', 'sms'] as const;
export type ChaseChannel = (typeof CHASE_CHANNELS)[number];
export const CHASE_STATUSES = ['scheduled', 'sent', 'bounced', 'failed', 'cancelled'] as const;
export type ChaseStatus = (typeof CHASE_STATUSES)[number];

export const HOUR_MS = 60 * 60 * 1000;
export const DAY_MS = 24 * HOUR_MS;

/** A series stops after this many reminders unless max_reminders says otherwise. */
export const DEFAULT_MAX_REMINDERS = 10;
/** The largest max_reminders accepted: past this, reminders are spam. */
export const MAX_REMINDERS_LIMIT = 20;
/** Custom intervals: at least one hour, at most 90 days. */
export const MIN_CUSTOM_INTERVAL_MINUTES = 60;
export const MAX_CUSTOM_INTERVAL_MINUTES = 90 * 24 * 60;
/** Three consecutive bounced reminder emails stall an intake (SPEC limit 10). */
export const STALL_AFTER_BOUNCES = 3;

/**
 * Quiet hours, in the client's local time when their time zone is known: nothing is sent from 20:00
 * until 08:00; a reminder that falls in them goes out at 09:00 local instead.
 */
export const QUIET_HOURS = { startMinute: 20 * 60, endMinute: 8 * 60, resumeMinute: 9 * 60 } as const;

/** SPEC's table: days after sending for the first reminders, then a fixed period. */
const SERIES: Record<'default' | 'gentle' | 'aggressive', { firstDays: number[]; thenEveryDays: number }> = {
  default: { firstDays: [2, 5, 9], thenEveryDays: 7 },
  gentle: { firstDays: [3, 8], thenEveryDays: 14 },
  aggressive: { firstDays: [1, 3, 5], thenEveryDays: 2 },
};

export interface ChaseSettings {
  schedule: ChaseScheduleName;
  /** custom only: minutes between reminders (the first comes one interval after sending). */
  intervalMinutes: number | null;
  maxReminders: number;
  respectQuietHours: boolean;
  /** HH:MM in the client's local time (UTC when the time zone is unknown), or null. */
  chaseAtTime: string | null;
  /** The client's IANA time zone, when known. */
  timeZone: string | null;
}

export const DEFAULT_CHASE_SETTINGS: ChaseSettings = {
  schedule: 'default',
  intervalMinutes: null,
  maxReminders: DEFAULT_MAX_REMINDERS,
  respectQuietHours: true,
  chaseAtTime: null,
  timeZone: null,
};

/** How long after sending the n-th reminder (from 1) is due, before local adjustments; null: none. */
export function reminderOffsetMs(
  settings: Pick<ChaseSettings, 'schedule' | 'intervalMinutes'>,
  n: number,
): number | null {
  if (!Number.isInteger(n) || n < 1) return null;
  const { schedule } = settings;
  if (schedule === 'off') return null;
  if (schedule === 'custom') {
    const minutes = settings.intervalMinutes;
    return minutes === null || minutes <= 0 ? null : n * minutes * 60_000;
  }
  const series = SERIES[schedule];
  const first = series.firstDays[n - 1];
  if (first !== undefined) return first * DAY_MS;
  const last = series.firstDays[series.firstDays.length - 1] ?? 0;
  return (last + (n - series.firstDays.length) * series.thenEveryDays) * DAY_MS;
}

/** The spacing before the n-th reminder: its offset minus the previous one's. */
function gapMs(settings: ChaseSettings, n: number): number {
  const offset = reminderOffsetMs(settings, n) ?? DAY_MS;
  const previous = n > 1 ? (reminderOffsetMs(settings, n - 1) ?? 0) : 0;
  return Math.max(offset - previous, HOUR_MS);
}

// ---- time zones (Intl only) ----

interface LocalParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether a string names a time zone this runtime knows. */
export function isTimeZone(name: string): boolean {
  try {
    formatterFor(name);
    return true;
  } catch {
    return false;
  }
}

export function localParts(ms: number, timeZone: string): LocalParts & { second: number } {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(new Date(ms))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year ?? 1970,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: (parts.hour ?? 0) % 24,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
  };
}

/** The zone's offset from UTC at an instant, in ms (local = UTC + offset). */
function zoneOffsetMs(ms: number, timeZone: string): number {
  const p = localParts(ms, timeZone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The instant at which a local wall-clock time occurs (a time in a DST gap lands just after it). */
export function zonedTimeToUtc(local: LocalParts, timeZone: string): number {
  const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute);
  const first = wall - zoneOffsetMs(wall, timeZone);
  return wall - zoneOffsetMs(first, timeZone);
}

function parseClock(hhmm: string): { hour: number; minute: number } {
  const [h, m] = hhmm.split(':');
  return { hour: Number(h), minute: Number(m) };
}

/** A local day moved by `days` (calendar arithmetic on the date only). */
function addLocalDays(p: LocalParts, days: number): LocalParts {
  const d = new Date(Date.UTC(p.year, p.month - 1, p.day + days));
  return { ...p, year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** Whether an instant is inside the client's quiet hours (false when the time zone is unknown). */
export function isQuietTime(ms: number, timeZone: string | null): boolean {
  if (!timeZone) return false;
  const p = localParts(ms, timeZone);
  const minute = p.hour * 60 + p.minute;
  return minute >= QUIET_HOURS.startMinute || minute < QUIET_HOURS.endMinute;
}

/** The first moment at or after `ms` outside quiet hours: 09:00 local the same or next morning. */
export function afterQuietHours(ms: number, timeZone: string | null): number {
  if (!timeZone || !isQuietTime(ms, timeZone)) return ms;
  const p = localParts(ms, timeZone);
  const day = p.hour * 60 + p.minute >= QUIET_HOURS.startMinute ? addLocalDays(p, 1) : p;
  return zonedTimeToUtc(
    {
      ...day,
      hour: Math.floor(QUIET_HOURS.resumeMinute / 60),
      minute: QUIET_HOURS.resumeMinute % 60,
    },
    timeZone,
  );
}

/**
 * Where a reminder planned for `ms` actually goes: at chase_at_time on that local day (UTC when the
 * zone is unknown), then out of quiet hours when they are respected and the zone is known.
 */
export function clientAdjustedTime(ms: number, settings: ChaseSettings): number {
  let at = ms;
  if (settings.chaseAtTime) {
    const zone = settings.timeZone ?? 'UTC';
    const p = localParts(at, zone);
    at = zonedTimeToUtc({ ...p, ...parseClock(settings.chaseAtTime) }, zone);
  }
  if (settings.respectQuietHours) at = afterQuietHours(at, settings.timeZone);
  return at;
}

/** The first adjusted time strictly after `floor`, starting from `candidate` and moving a day at a time. */
function firstAdjustedAfter(candidate: number, floor: number, settings: ChaseSettings): number {
  let at = clientAdjustedTime(candidate, settings);
  for (let guard = 0; at <= floor && guard < 400; guard++) {
    at = clientAdjustedTime(at + DAY_MS, settings);
  }
  return Math.max(at, floor + 1);
}

export interface NextReminderInput {
  settings: ChaseSettings;
  /** When the intake was sent: the series counts from here. */
  sentAtMs: number;
  /** The sequence number of the series' last reminder (0: none yet). */
  lastSequenceNo: number;
  /** The present (a dispatch time when chaining from a reminder just handled). */
  nowMs: number;
  /**
   * true when the series starts again after a pause (something is outstanding again): the next
   * reminder then keeps at least its usual spacing, at most a day, from now.
   */
  resuming: boolean;
}

/**
 * The series' next reminder: its sequence number and due time, or null when the series is over
 * (schedule off, cap reached). Reminder n is due at sentAt + offset(n), adjusted for the client;
 * when that moment has already passed (a late worker, a resumed series) it comes one usual
 * spacing after now instead, so reminders never go out in a burst.
 */
export function nextReminder(input: NextReminderInput): { sequenceNo: number; atMs: number } | null {
  const { settings, sentAtMs, nowMs } = input;
  const n = input.lastSequenceNo + 1;
  if (n > settings.maxReminders) return null;
  const offset = reminderOffsetMs(settings, n);
  if (offset === null) return null;
  const gap = gapMs(settings, n);
  const floor = input.resuming ? nowMs + Math.min(gap, DAY_MS) : nowMs;
  const planned = clientAdjustedTime(sentAtMs + offset, settings);
  if (planned > floor) return { sequenceNo: n, atMs: planned };
  return { sequenceNo: n, atMs: firstAdjustedAfter(nowMs + gap, floor, settings) };
}

/** Every planned time of a series from its start (no pauses), for documentation and tests. */
export function plannedSeries(settings: ChaseSettings, sentAtMs: number): number[] {
  const times: number[] = [];
  let last = 0;
  let now = sentAtMs;
  for (;;) {
    const next = nextReminder({ settings, sentAtMs, lastSequenceNo: last, nowMs: now, resuming: false });
    if (!next) return times;
    times.push(next.atMs);
    last = next.sequenceNo;
    now = next.atMs;
  }
}

// ---- stop conditions ----

export interface ChaseItem {
  key: string;
  required: boolean;
  status: string;
  /** Items the account holder fills in themselves are never chased. */
  clientFacing?: boolean;
}

/**
 * What the client still owes: every item sent back for revision, and every required item not yet
 * submitted. An intake without required items owes its pending optional ones.
 */
export function outstandingItems<T extends ChaseItem>(items: readonly T[]): T[] {
  const facing = items.filter((i) => i.clientFacing !== false);
  const anyRequired = facing.some((i) => i.required);
  return facing.filter(
    (i) => i.status === 'needs_revision' || (i.status === 'pending' && (i.required || !anyRequired)),
  );
}

export type ChaseStopReason =
  'not_sent' | 'completed' | 'archived' | 'nothing_outstanding' | 'opted_out' | 'stalled';

export interface ChaseState {
  intakeStatus: string;
  items: readonly ChaseItem[];
  optedOut: boolean;
  stalled: boolean;
}

/** Why scheduled reminders must not go out now, or null when they may. */
export function reminderStopReason(state: ChaseState): ChaseStopReason | null {
  if (state.intakeStatus === 'draft') return 'not_sent';
  if (state.intakeStatus === 'completed') return 'completed';
  if (state.intakeStatus === 'archived') return 'archived';
  if (state.optedOut) return 'opted_out';
  if (state.stalled) return 'stalled';
  if (outstandingItems(state.items).length === 0) return 'nothing_outstanding';
  return null;
}

/**
 * How many reminder emails in a row, counting back from the latest, bounced. SMS chases, failed
 * sends (the outcome was not a bounce) and cancelled or pending ones neither count nor break the run;
 * a delivered email does.
 */
export function consecutiveBouncedEmails(
  chasesInAttemptOrder: readonly { channel: string; status: string }[],
): number {
  let run = 0;
  for (let i = chasesInAttemptOrder.length - 1; i >= 0; i--) {
    const chase = chasesInAttemptOrder[i];
    if (!chase || chase.channel !== 'email') continue;
    if (chase.status === 'bounced') run++;
    else if (chase.status === 'sent') break;
  }
  return run;
}

/** Whether a chase that just bounced makes the intake stalled (exactly at the threshold, so it fires once). */
export function bounceStallsIntake(
  chasesInAttemptOrder: readonly { channel: string; status: string }[],
): boolean {
  return consecutiveBouncedEmails(chasesInAttemptOrder) === STALL_AFTER_BOUNCES;
}

// ---- due date ----

/**
 * The instant a due date has passed: midnight at the end of that day in the client's time zone
 * (UTC when unknown). Until then the client can still deliver "by" the date.
 */
export function dueDatePassesAt(dueDate: string, timeZone: string | null): number {
  const [year, month, day] = dueDate.split('-').map(Number);
  const next = addLocalDays({ year: year ?? 1970, month: month ?? 1, day: day ?? 1, hour: 0, minute: 0 }, 1);
  return zonedTimeToUtc(next, timeZone ?? 'UTC');
}

/** The required client-facing items still missing (not submitted or approved): what makes an intake overdue. */
export function missingRequiredItems<T extends ChaseItem>(items: readonly T[]): T[] {
  return items.filter(
    (i) =>
      i.clientFacing !== false && i.required && (i.status === 'pending' || i.status === 'needs_revision'),
  );
}

/** Is an HH:MM clock time valid? */
export function isClockTime(value: string): boolean {
  return /^([01]\d|2[0-3]):[0-5]\d$/.test(value);
}
