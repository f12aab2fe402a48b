import type { PlanId } from './plans.js';
/**
 * Follow-up guidance returned with a new intake: how the caller (often an agent) should learn about
 * the client's progress. A webhook endpoint is best (called the moment the client acts); without one,
 * a polling plan that is sparse while the due date is far, tighter as it nears, never more frequent
 * than the plan's recommended polling interval (SPEC "Limits"), and that ends some days after the due
 * date.
 */
export interface FollowUpInput {
  /** Enabled webhook endpoints of the intake's account and mode. */
  activeEndpoints: number;
  /** The event names those endpoints subscribe to (deduplicated by the function). */
  subscribedEvents: readonly string[];
  /** The plan's "poll at most once every" interval, in seconds. */
  minPollSeconds: number;
  /** The intake's due date (YYYY-MM-DD) or null. */
  dueDate: string | null;
  now: Date;
}

/**
 * What an endpoint should subscribe to for one intake's follow-up: the client's answers, the end, and
 * the signs that the client cannot be reached.
 */
export const FOLLOW_UP_EVENTS = ['chase.bounced', 'intake.completed', 'intake.stalled', 'item.submitted'];

/** The agent tool that registers, lists, tests and removes webhook endpoints. */
export const WEBHOOK_TOOL = 'manage_webhook';

export interface FollowUp {
  recommended: 'webhook' | 'schedule';
  webhook: { active_endpoints: number; events: string[]; register_with: typeof WEBHOOK_TOOL };
  schedule: { check_with: 'get_intake_status'; every_hours: number; until: string };
}

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** Without a due date, a month of checking; with one, a week past it for late clients. */
export const FOLLOW_UP_WITHOUT_DUE_DAYS = 30;
export const FOLLOW_UP_GRACE_DAYS = 7;

/** Hours between checks by the time left until the due date's end (UTC). */
export function checkEveryHours(msUntilDue: number | null): number {
  if (msUntilDue === null || msUntilDue > 7 * DAY_MS) return 24;
  if (msUntilDue > 2 * DAY_MS) return 12;
  if (msUntilDue > DAY_MS) return 4;
  return 1;
}

export function followUpPlan(input: FollowUpInput): FollowUp {
  const nowMs = input.now.getTime();
  const dueEndMs = input.dueDate ? Date.parse(`${input.dueDate}T23:59:59.999Z`) : null;
  const hours = checkEveryHours(dueEndMs === null ? null : dueEndMs - nowMs);
  // Never tighter than the plan's recommended polling interval (hours, two decimals, rounded up).
  const floorHours = Math.ceil((input.minPollSeconds / 3600) * 100) / 100;
  const untilMs =
    dueEndMs === null
      ? nowMs + FOLLOW_UP_WITHOUT_DUE_DAYS * DAY_MS
      : dueEndMs + FOLLOW_UP_GRACE_DAYS * DAY_MS;
  return {
    recommended: input.activeEndpoints > 0 ? 'webhook' : 'schedule',
    webhook: {
      active_endpoints: input.activeEndpoints,
      // Without an endpoint: the events to register one for, so the agent can act on it at once.
      events: input.activeEndpoints > 0 ? [...new Set(input.subscribedEvents)].sort() : FOLLOW_UP_EVENTS,
      register_with: WEBHOOK_TOOL,
    },
    schedule: {
      check_with: 'get_intake_status',
      every_hours: Math.max(hours, floorHours),
      until: new Date(Math.max(untilMs, nowMs)).toISOString(),
    },
  };
}

/** SPEC "Limits": the most often an agent should poll, per plan, to stay within its hourly budget. */
export const POLL_AT_MOST_EVERY_SECONDS: Readonly<Record<PlanId, number>> = {
  free: 300,
  solo: 30,
  agency: 12,
};
