import { describe, expect, it } from 'vitest';
import { checkEveryHours, followUpPlan, type FollowUpInput } from './follow-up.js';

const now = new Date('2026-03-01T12:00:00.000Z');
const base: FollowUpInput = {
  activeEndpoints: 0,
  subscribedEvents: [],
  minPollSeconds: 30,
  dueDate: null,
  now,
};

describe('followUpPlan', () => {
  it('recommends the webhook when an endpoint is active, listing its events once', () => {
    const plan = followUpPlan({
      ...base,
      activeEndpoints: 2,
      subscribedEvents: ['item.submitted', 'intake.completed', 'item.submitted'],
    });
    expect(plan.recommended).toBe('webhook');
    expect(plan.webhook).toEqual({
      active_endpoints: 2,
      events: ['intake.completed', 'item.submitted'],
      register_with: 'manage_webhook',
    });
  });

  it('without an endpoint, plans daily checks for a month when there is no due date', () => {
    expect(followUpPlan(base)).toEqual({
      recommended: 'schedule',
      // The events to register an endpoint for, and the agent tool that does it.
      webhook: {
        active_endpoints: 0,
        events: ['chase.bounced', 'intake.completed', 'intake.stalled', 'item.submitted'],
        register_with: 'manage_webhook',
      },
      schedule: { check_with: 'get_intake_status', every_hours: 24, until: '2026-03-31T12:00:00.000Z' },
    });
  });

  it.each([
    ['2026-03-20', 24],
    ['2026-03-05', 12],
    ['2026-03-03', 12],
    ['2026-03-02', 4],
    ['2026-03-01', 1],
  ])('tightens as the due date %s nears: every %i hours', (dueDate, hours) => {
    const plan = followUpPlan({ ...base, dueDate });
    expect(plan.schedule.every_hours).toBe(hours);
    expect(plan.schedule.until).toBe(
      new Date(Date.parse(`${dueDate}T23:59:59.999Z`) + 7 * 86_400_000).toISOString(),
    );
  });

  it("never polls more often than the plan's recommended interval", () => {
    const plan = followUpPlan({ ...base, dueDate: '2026-03-01', minPollSeconds: 2 * 3600 });
    expect(plan.schedule.every_hours).toBe(2);
    // Free plan: once every 5 minutes is far below an hour, so the hourly check stands.
    expect(followUpPlan({ ...base, dueDate: '2026-03-01', minPollSeconds: 300 }).schedule.every_hours).toBe(
      1,
    );
  });

  it('never sets until in the past (a due date long gone)', () => {
    expect(followUpPlan({ ...base, dueDate: '2025-01-01' }).schedule.until).toBe(now.toISOString());
  });

  it('steps are monotonic in the time left', () => {
    const steps = [null, 10, 5, 1.5, 0.5, -3].map((days) =>
      checkEveryHours(days === null ? null : days * 86_400_000),
    );
    expect(steps).toEqual([24, 24, 12, 4, 1, 1]);
  });
});
