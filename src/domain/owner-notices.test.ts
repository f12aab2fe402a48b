import { describe, expect, it } from 'vitest';
import {
  defaultFrequency,
  digestWindow,
  headlineOf,
  nextDigestAt,
  noticeOfEvent,
  peopleAt,
  summarize,
  type Notice,
  type NoticeFrequency,
} from './owner-notices.js';

const at = (iso: string) => Date.parse(iso);

describe('what the owner is told about', () => {
  it('keeps submissions, milestones, bounces, stalls, overdue and opt-outs, and nothing routine', () => {
    expect(noticeOfEvent('item.submitted', { item_key: 'logo', item_type: 'image' })).toEqual({
      type: 'item.submitted',
      data: { item_key: 'logo' },
    });
    expect(noticeOfEvent('intake.completed', { project_name: 'P' })).toEqual({
      type: 'intake.completed',
      data: {},
    });
    expect(
      noticeOfEvent('chase.bounced', { client_email: 'dana@example.com', reason: 'hard_bounce' }),
    ).toEqual({ type: 'chase.bounced', data: { address: 'dana@example.com' } });
    expect(
      noticeOfEvent('intake.overdue', { due_date: '2027-02-01', missing_items: ['logo', 3, 'copy'] }),
    ).toEqual({ type: 'intake.overdue', data: { due_date: '2027-02-01', missing_items: ['logo', 'copy'] } });
    expect(noticeOfEvent('intake.stalled', {})).toEqual({
      type: 'intake.stalled',
      data: { missing_items: [] },
    });
    for (const routine of ['intake.sent', 'intake.viewed', 'client.viewed', 'chase.sent', 'item.approved']) {
      expect(noticeOfEvent(routine, { item_key: 'logo' })).toBeNull();
    }
    // A submission without its key cannot be named: not a notice.
    expect(noticeOfEvent('item.submitted', {})).toBeNull();
  });
});

describe('who is told', () => {
  const people = [
    { email: 'Owner@example.com', role: 'owner' },
    { email: 'sam@example.com', role: 'member' },
    { email: 'kim@example.com', role: 'member' },
  ];

  it('tells the account holder of each sending by default; other people opt in', () => {
    expect(defaultFrequency('owner')).toBe('each');
    expect(defaultFrequency('member')).toBe('off');
    expect(peopleAt(people, new Map(), 'each').map((p) => p.email)).toEqual(['Owner@example.com']);
    expect(peopleAt(people, new Map(), 'daily')).toEqual([]);
  });

  it("follows each person's own choice, matched by address whatever its case", () => {
    const chosen = new Map<string, NoticeFrequency>([
      ['owner@example.com', 'off'],
      ['sam@example.com', 'each'],
      ['kim@example.com', 'daily'],
    ]);
    expect(peopleAt(people, chosen, 'each').map((p) => p.email)).toEqual(['sam@example.com']);
    expect(peopleAt(people, chosen, 'daily').map((p) => p.email)).toEqual(['kim@example.com']);
    expect(peopleAt(people, chosen, 'off').map((p) => p.email)).toEqual(['Owner@example.com']);
  });

  it('tells one address once, even when it is listed twice', () => {
    const twice = [...people, { email: 'owner@example.com', role: 'member' }];
    expect(peopleAt(twice, new Map(), 'each')).toHaveLength(1);
  });
});

describe('one email per sending', () => {
  const notice = (type: Notice['type'], data: Notice['data'], second: number): Notice => ({
    type,
    data,
    occurredAt: new Date(Date.UTC(2027, 0, 1, 10, 0, second)).toISOString(),
  });

  it('gathers a burst of submissions into one list, each item once, in arrival order', () => {
    const summary = summarize([
      notice('item.submitted', { item_key: 'copy' }, 3),
      notice('item.submitted', { item_key: 'logo' }, 1),
      notice('item.submitted', { item_key: 'colours' }, 2),
      notice('item.submitted', { item_key: 'logo' }, 4),
    ]);
    expect(summary.submittedKeys).toEqual(['logo', 'colours', 'copy']);
    expect(headlineOf(summary)).toBe('answers');
  });

  it('says "ready for review" when the last required answer arrives, "complete" when all are approved', () => {
    const ready = summarize([
      notice('item.submitted', { item_key: 'logo' }, 1),
      notice('intake.completed', {}, 1),
    ]);
    expect(ready).toMatchObject({ submittedKeys: ['logo'], readyForReview: true, complete: false });
    expect(headlineOf(ready)).toBe('ready');
    const complete = summarize([notice('intake.completed', {}, 1), notice('intake.complete', {}, 2)]);
    expect(complete).toMatchObject({ readyForReview: false, complete: true });
    expect(headlineOf(complete)).toBe('complete');
  });

  it('leads with trouble: a stall before a bounce before an overdue date before answers', () => {
    const answers = notice('item.submitted', { item_key: 'logo' }, 1);
    const bounce = notice('chase.bounced', { address: 'dana@example.com' }, 2);
    const overdue = notice('intake.overdue', { due_date: '2027-01-01', missing_items: ['copy'] }, 3);
    expect(headlineOf(summarize([answers, overdue]))).toBe('overdue');
    expect(headlineOf(summarize([answers, overdue, bounce]))).toBe('bounced');
    expect(headlineOf(summarize([answers, bounce, notice('intake.stalled', {}, 4)]))).toBe('stalled');
    expect(summarize([bounce, bounce]).bounced).toEqual(['dana@example.com']);
    expect(summarize([overdue]).overdue).toEqual({ dueDate: '2027-01-01', missingKeys: ['copy'] });
    expect(headlineOf(summarize([]))).toBeNull();
  });
});

describe('the daily digest', () => {
  it('goes out at 08:00 UTC when the time zone is unknown', () => {
    expect(nextDigestAt(at('2027-01-01T07:59:59Z'), null)).toBe(at('2027-01-01T08:00:00Z'));
    expect(nextDigestAt(at('2027-01-01T08:00:00Z'), null)).toBe(at('2027-01-02T08:00:00Z'));
    expect(nextDigestAt(at('2027-01-01T23:30:00Z'), null)).toBe(at('2027-01-02T08:00:00Z'));
  });

  it("goes out at 08:00 in the person's time zone, across daylight-saving changes", () => {
    // Berlin: UTC+1 in winter, UTC+2 from 28 March 2027.
    expect(nextDigestAt(at('2027-01-01T12:00:00Z'), 'Europe/Berlin')).toBe(at('2027-01-02T07:00:00Z'));
    expect(nextDigestAt(at('2027-03-27T12:00:00Z'), 'Europe/Berlin')).toBe(at('2027-03-28T06:00:00Z'));
    // New York, the evening before in UTC terms: still the same local day's 08:00.
    expect(nextDigestAt(at('2027-01-01T03:00:00Z'), 'America/New_York')).toBe(at('2027-01-01T13:00:00Z'));
  });

  it('covers the day since the previous digest: 24 hours, 23 on the day clocks go forward', () => {
    const plain = digestWindow(at('2027-01-02T08:00:00Z'), null);
    expect(plain).toEqual({ fromMs: at('2027-01-01T08:00:00Z'), toMs: at('2027-01-02T08:00:00Z') });
    const spring = digestWindow(at('2027-03-28T06:00:00Z'), 'Europe/Berlin');
    expect(spring.toMs - spring.fromMs).toBe(23 * 3_600_000);
    expect(spring.fromMs).toBe(at('2027-03-27T07:00:00Z'));
  });
});
