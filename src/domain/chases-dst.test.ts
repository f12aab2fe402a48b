import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DAY_MS,
  DEFAULT_CHASE_SETTINGS,
  clientAdjustedTime,
  dueDatePassesAt,
  isQuietTime,
  localParts,
  missingRequiredItems,
  plannedSeries,
  zonedTimeToUtc,
  type ChaseSettings,
} from './chases.js';

const settings = (patch: Partial<ChaseSettings> = {}): ChaseSettings => ({
  ...DEFAULT_CHASE_SETTINGS,
  ...patch,
});
const iso = (ms: number) => new Date(ms).toISOString();

describe('reminders across daylight-saving changes', () => {
  it('chase_at_time keeps the local time when the clocks spring forward (Paris, 29 March 2026)', () => {
    // Sent Thursday 26 March 12:00 UTC; custom daily reminders at 10:30 Paris time.
    const sent = Date.UTC(2026, 2, 26, 12, 0);
    const s = settings({
      schedule: 'custom',
      intervalMinutes: 24 * 60,
      chaseAtTime: '10:30',
      timeZone: 'Europe/Paris',
      maxReminders: 4,
    });
    expect(plannedSeries(s, sent).map(iso)).toEqual([
      '2026-03-27T09:30:00.000Z', // CET, UTC+1
      '2026-03-28T09:30:00.000Z',
      '2026-03-29T08:30:00.000Z', // CEST from 02:00 that night, UTC+2
      '2026-03-30T08:30:00.000Z',
    ]);
  });

  it('chase_at_time keeps the local time when the clocks fall back (New York, 1 November 2026)', () => {
    const sent = Date.UTC(2026, 9, 30, 15, 0);
    const s = settings({
      schedule: 'custom',
      intervalMinutes: 24 * 60,
      chaseAtTime: '09:00',
      timeZone: 'America/New_York',
      maxReminders: 3,
    });
    expect(plannedSeries(s, sent).map(iso)).toEqual([
      '2026-10-31T13:00:00.000Z', // EDT, UTC−4
      '2026-11-01T14:00:00.000Z', // EST from 02:00 that morning, UTC−5
      '2026-11-02T14:00:00.000Z',
    ]);
  });

  it('a chase_at_time inside the spring-forward gap goes just after it, never a day late', () => {
    const gap = zonedTimeToUtc({ year: 2026, month: 3, day: 29, hour: 2, minute: 30 }, 'Europe/Paris');
    expect(localParts(gap, 'Europe/Paris')).toMatchObject({ day: 29, hour: 3, minute: 30 });
    const folded = zonedTimeToUtc({ year: 2026, month: 10, day: 25, hour: 2, minute: 30 }, 'Europe/Paris');
    expect(localParts(folded, 'Europe/Paris')).toMatchObject({ day: 25, hour: 2, minute: 30 });
  });

  it('quiet hours end at 09:00 local on the morning the clocks change', () => {
    const tz = 'America/New_York';
    // 21:00 EST on Saturday 7 March; the clocks spring forward at 02:00 on the 8th.
    const evening = Date.UTC(2026, 2, 8, 2, 0);
    expect(isQuietTime(evening, tz)).toBe(true);
    const moved = clientAdjustedTime(evening, settings({ timeZone: tz }));
    expect(iso(moved)).toBe('2026-03-08T13:00:00.000Z'); // 09:00 EDT, not 14:00Z (09:00 EST)
  });

  it('never plans a reminder in quiet hours, in any zone, at any instant (property)', () => {
    const zones = ['Europe/Paris', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'Pacific/Chatham'];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 11, 31) }),
        fc.option(fc.constantFrom('06:00', '10:30', '19:59', '22:15'), { nil: null }),
        (timeZone, at, chaseAtTime) => {
          const s = settings({ timeZone, chaseAtTime });
          const adjusted = clientAdjustedTime(at, s);
          expect(isQuietTime(adjusted, timeZone)).toBe(false);
          // Never more than a day and a half away from the planned moment.
          expect(Math.abs(adjusted - at)).toBeLessThan(1.5 * DAY_MS);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('due dates', () => {
  it('pass at midnight ending the day in the client zone, UTC when unknown', () => {
    expect(iso(dueDatePassesAt('2026-12-15', null))).toBe('2026-12-16T00:00:00.000Z');
    expect(iso(dueDatePassesAt('2026-12-15', 'Europe/Paris'))).toBe('2026-12-15T23:00:00.000Z');
    expect(iso(dueDatePassesAt('2026-12-15', 'America/Los_Angeles'))).toBe('2026-12-16T08:00:00.000Z');
    expect(iso(dueDatePassesAt('2026-12-31', 'Asia/Tokyo'))).toBe('2026-12-31T15:00:00.000Z');
  });

  it('follow daylight saving: the end of 28 March is still CET, the end of 29 March is CEST', () => {
    expect(iso(dueDatePassesAt('2026-03-28', 'Europe/Paris'))).toBe('2026-03-28T23:00:00.000Z');
    expect(iso(dueDatePassesAt('2026-03-29', 'Europe/Paris'))).toBe('2026-03-29T22:00:00.000Z');
  });

  it('count as missed only required client items not yet submitted or approved', () => {
    const items = [
      { key: 'logo', required: true, status: 'pending' },
      { key: 'brief', required: true, status: 'needs_revision' },
      { key: 'about', required: true, status: 'submitted' },
      { key: 'photos', required: true, status: 'approved' },
      { key: 'site', required: false, status: 'pending' },
      { key: 'budget', required: true, status: 'pending', clientFacing: false },
    ];
    expect(missingRequiredItems(items).map((i) => i.key)).toEqual(['logo', 'brief']);
    expect(missingRequiredItems(items.slice(2))).toEqual([]);
  });
});
