import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  DEFAULT_CHASE_SETTINGS,
  HOUR_MS,
  afterQuietHours,
  bounceStallsIntake,
  clientAdjustedTime,
  consecutiveBouncedEmails,
  isQuietTime,
  localParts,
  nextReminder,
  outstandingItems,
  plannedSeries,
  reminderOffsetMs,
  reminderStopReason,
  zonedTimeToUtc,
  type ChaseSettings,
} from './chases.js';

const SENT = Date.UTC(2026, 2, 2, 12, 0); // Monday 2 March 2026, 12:00 UTC
const settings = (patch: Partial<ChaseSettings> = {}): ChaseSettings => ({
  ...DEFAULT_CHASE_SETTINGS,
  ...patch,
});
const days = (times: number[]) => times.map((t) => (t - SENT) / DAY_MS);

describe('chase schedules', () => {
  it('follows SPEC: default 2, 5, 9 days then weekly; capped at 10 reminders', () => {
    expect(days(plannedSeries(settings(), SENT))).toEqual([2, 5, 9, 16, 23, 30, 37, 44, 51, 58]);
  });

  it('gentle: 3, 8 days then every 14 days', () => {
    expect(days(plannedSeries(settings({ schedule: 'gentle', maxReminders: 5 }), SENT))).toEqual([
      3, 8, 22, 36, 50,
    ]);
  });

  it('aggressive: 1, 3, 5 days then every other day', () => {
    expect(days(plannedSeries(settings({ schedule: 'aggressive', maxReminders: 6 }), SENT))).toEqual([
      1, 3, 5, 7, 9, 11,
    ]);
  });

  it('custom: every interval from sending; off: nothing', () => {
    const custom = settings({ schedule: 'custom', intervalMinutes: 36 * 60, maxReminders: 3 });
    expect(days(plannedSeries(custom, SENT))).toEqual([1.5, 3, 4.5]);
    expect(plannedSeries(settings({ schedule: 'off' }), SENT)).toEqual([]);
    expect(plannedSeries(settings({ maxReminders: 0 }), SENT)).toEqual([]);
    expect(reminderOffsetMs({ schedule: 'custom', intervalMinutes: null }, 1)).toBeNull();
    expect(reminderOffsetMs({ schedule: 'default', intervalMinutes: null }, 0)).toBeNull();
  });

  it('keeps the usual spacing from now when a reminder is late, instead of a burst', () => {
    const late = nextReminder({
      settings: settings(),
      sentAtMs: SENT,
      lastSequenceNo: 1,
      nowMs: SENT + 20 * DAY_MS,
      resuming: false,
    });
    expect(late).toEqual({ sequenceNo: 2, atMs: SENT + 23 * DAY_MS });
  });

  it('resumes a paused series no sooner than its spacing (at most a day) from now', () => {
    const soon = nextReminder({
      settings: settings(),
      sentAtMs: SENT,
      lastSequenceNo: 1,
      nowMs: SENT + 4.9 * DAY_MS,
      resuming: true,
    });
    expect(soon).toEqual({ sequenceNo: 2, atMs: SENT + 4.9 * DAY_MS + 3 * DAY_MS });
    const onTime = nextReminder({
      settings: settings(),
      sentAtMs: SENT,
      lastSequenceNo: 1,
      nowMs: SENT + 3 * DAY_MS,
      resuming: true,
    });
    expect(onTime?.atMs).toBe(SENT + 5 * DAY_MS);
  });
});

describe('client time', () => {
  it('converts local wall-clock times in a zone, across DST', () => {
    const paris = zonedTimeToUtc({ year: 2026, month: 1, day: 15, hour: 9, minute: 0 }, 'Europe/Paris');
    expect(new Date(paris).toISOString()).toBe('2026-01-15T08:00:00.000Z');
    const summer = zonedTimeToUtc({ year: 2026, month: 7, day: 15, hour: 9, minute: 0 }, 'Europe/Paris');
    expect(new Date(summer).toISOString()).toBe('2026-07-15T07:00:00.000Z');
    expect(localParts(summer, 'America/New_York')).toMatchObject({ day: 15, hour: 3, minute: 0 });
  });

  it('quiet hours: 20:00–08:00 local shift to 09:00; unknown zone: no shift', () => {
    const tz = 'America/New_York'; // UTC−5 in March before the 8th
    const at2130 = Date.UTC(2026, 2, 3, 2, 30); // 21:30 on the 2nd in New York
    expect(isQuietTime(at2130, tz)).toBe(true);
    expect(new Date(afterQuietHours(at2130, tz)).toISOString()).toBe('2026-03-03T14:00:00.000Z');
    const at0600 = Date.UTC(2026, 2, 3, 11, 0); // 06:00 in New York
    expect(new Date(afterQuietHours(at0600, tz)).toISOString()).toBe('2026-03-03T14:00:00.000Z');
    const noon = Date.UTC(2026, 2, 3, 17, 0);
    expect(isQuietTime(noon, tz)).toBe(false);
    expect(afterQuietHours(noon, tz)).toBe(noon);
    expect(isQuietTime(at2130, null)).toBe(false);
    expect(clientAdjustedTime(at2130, settings({ timeZone: tz, respectQuietHours: false }))).toBe(at2130);
  });

  it('moves a series into daytime: sent at 21:00 Tokyo, reminders at 09:00 the next morning', () => {
    const sent = Date.UTC(2026, 2, 2, 12, 0); // 21:00 in Tokyo
    const times = plannedSeries(settings({ timeZone: 'Asia/Tokyo', maxReminders: 3 }), sent);
    expect(times.map((t) => new Date(t).toISOString())).toEqual([
      '2026-03-05T00:00:00.000Z',
      '2026-03-08T00:00:00.000Z',
      '2026-03-12T00:00:00.000Z',
    ]);
  });

  it('chase_at_time sends at that local time on the due day', () => {
    const s = settings({ timeZone: 'Europe/Paris', chaseAtTime: '10:30', maxReminders: 2 });
    expect(plannedSeries(s, SENT).map((t) => new Date(t).toISOString())).toEqual([
      '2026-03-04T09:30:00.000Z',
      '2026-03-07T09:30:00.000Z',
    ]);
    const utc = settings({ chaseAtTime: '07:15', maxReminders: 1 });
    expect(new Date(plannedSeries(utc, SENT)[0] ?? 0).toISOString()).toBe('2026-03-04T07:15:00.000Z');
  });

  it('never plans two reminders at the same moment when chase_at_time folds a custom series', () => {
    const s = settings({
      schedule: 'custom',
      intervalMinutes: 6 * 60,
      chaseAtTime: '10:00',
      maxReminders: 3,
    });
    const times = plannedSeries(s, SENT);
    expect(times).toHaveLength(3);
    for (let i = 1; i < times.length; i++)
      expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThan(HOUR_MS);
  });
});

describe('stop conditions and bounces', () => {
  const items = (statuses: [string, boolean][]) =>
    statuses.map(([status, required], i) => ({ key: `k${i}`, status, required }));

  it('owes required items not submitted and anything needing revision', () => {
    expect(
      outstandingItems(
        items([
          ['pending', true],
          ['submitted', true],
          ['needs_revision', false],
          ['pending', false],
        ]),
      ).map((i) => i.key),
    ).toEqual(['k0', 'k2']);
    expect(outstandingItems(items([['pending', false]])).map((i) => i.key)).toEqual(['k0']);
    expect(
      outstandingItems([{ key: 'mine', status: 'pending', required: true, clientFacing: false }]),
    ).toEqual([]);
  });

  it('stops for drafts, completed, archived, opted-out, stalled and nothing outstanding', () => {
    const owing = items([['pending', true]]);
    const base = { items: owing, optedOut: false, stalled: false };
    expect(reminderStopReason({ ...base, intakeStatus: 'sent' })).toBeNull();
    expect(reminderStopReason({ ...base, intakeStatus: 'in_progress' })).toBeNull();
    expect(reminderStopReason({ ...base, intakeStatus: 'draft' })).toBe('not_sent');
    expect(reminderStopReason({ ...base, intakeStatus: 'completed' })).toBe('completed');
    expect(reminderStopReason({ ...base, intakeStatus: 'archived' })).toBe('archived');
    expect(reminderStopReason({ ...base, intakeStatus: 'sent', optedOut: true })).toBe('opted_out');
    expect(reminderStopReason({ ...base, intakeStatus: 'sent', stalled: true })).toBe('stalled');
    expect(
      reminderStopReason({ ...base, intakeStatus: 'in_progress', items: items([['submitted', true]]) }),
    ).toBe('nothing_outstanding');
  });

  it('counts consecutive bounced emails; SMS and failures do not break the run', () => {
    const c = (channel: string, status: string) => ({ channel, status });
    expect(consecutiveBouncedEmails([c('email', 'bounced'), c('email', 'sent')])).toBe(0);
    expect(
      consecutiveBouncedEmails([
        c('email', 'sent'),
        c('email', 'bounced'),
        c('sms', 'sent'),
        c('email', 'failed'),
        c('email', 'bounced'),
      ]),
    ).toBe(2);
    const three = [c('email', 'bounced'), c('email', 'bounced'), c('email', 'bounced')];
    expect(bounceStallsIntake(three)).toBe(true);
    expect(bounceStallsIntake([...three, c('email', 'bounced')])).toBe(false);
  });
});
