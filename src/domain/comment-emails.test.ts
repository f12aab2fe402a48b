import { describe, expect, it } from 'vitest';
import { COMMENT_EMAIL_DELAY_MS, commentEmailDueAt, sendableAt } from './comment-emails.js';

const at = (iso: string) => Date.parse(iso);

describe('comment emails to the client', () => {
  it('wait a short window for the comments that follow', () => {
    const now = at('2026-03-10T10:00:00Z');
    expect(commentEmailDueAt(now, { respectQuietHours: true, timeZone: 'Europe/Berlin' })).toBe(
      now + COMMENT_EMAIL_DELAY_MS,
    );
  });

  it("move out of the client's quiet hours to 09:00 local, like reminders", () => {
    // 21:00 in Berlin (UTC+1 in March before the change): the email waits for 09:00 the next morning.
    const evening = at('2026-03-10T20:00:00Z');
    expect(commentEmailDueAt(evening, { respectQuietHours: true, timeZone: 'Europe/Berlin' })).toBe(
      at('2026-03-11T08:00:00Z'),
    );
    expect(
      sendableAt(at('2026-03-11T04:00:00Z'), { respectQuietHours: true, timeZone: 'Europe/Berlin' }),
    ).toBe(at('2026-03-11T08:00:00Z'));
  });

  it('go at once when quiet hours are off or the time zone is unknown', () => {
    const evening = at('2026-03-10T20:00:00Z');
    expect(sendableAt(evening, { respectQuietHours: false, timeZone: 'Europe/Berlin' })).toBe(evening);
    expect(sendableAt(evening, { respectQuietHours: true, timeZone: null })).toBe(evening);
  });
});
