import { PLAN_IDS, type PlanId } from './plans.js';

/** The plans one can buy; free is what an account falls back to without a subscription. */
export const PAID_PLAN_IDS = ['solo', 'agency'] as const satisfies readonly PlanId[];
export type PaidPlanId = (typeof PAID_PLAN_IDS)[number];

export function isPaidPlanId(value: unknown): value is PaidPlanId {
  return typeof value === 'string' && (PAID_PLAN_IDS as readonly string[]).includes(value);
}

export function isPlanId(value: unknown): value is PlanId {
  return typeof value === 'string' && (PLAN_IDS as readonly string[]).includes(value);
}

/**
 * Subscription statuses that keep the plan's features. past_due keeps them while the provider retries
 * the payment (its dunning decides when to cancel); every other status (canceled, unpaid,
 * incomplete, incomplete_expired, paused) means the account is back on free.
 */
const PAYING_STATUSES = new Set(['active', 'trialing', 'past_due']);

/** Whether a subscription in this status still gives its plan. */
export function subscriptionKeepsPlan(status: string | null): boolean {
  return status !== null && PAYING_STATUSES.has(status);
}

/** The plan an account is on given its subscription's status and the plan the subscription is for. */
export function planForSubscription(status: string, subscribedPlan: PlanId | undefined): PlanId {
  if (!subscriptionKeepsPlan(status) || !subscribedPlan) return 'free';
  return subscribedPlan;
}
