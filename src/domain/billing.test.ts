import { describe, expect, it } from 'vitest';
import { isPaidPlanId, isPlanId, planForSubscription, subscriptionKeepsPlan } from './billing.js';

describe('planForSubscription', () => {
  it('keeps the subscribed plan while the subscription pays (or is being retried)', () => {
    for (const status of ['active', 'trialing', 'past_due']) {
      expect(planForSubscription(status, 'solo')).toBe('solo');
    }
  });

  it('falls back to free when the subscription ended or never started', () => {
    for (const status of ['canceled', 'unpaid', 'incomplete', 'incomplete_expired', 'paused']) {
      expect(planForSubscription(status, 'agency')).toBe('free');
    }
  });

  it('falls back to free when the subscribed plan is unknown', () => {
    expect(planForSubscription('active', undefined)).toBe('free');
  });
});

describe('isPlanId', () => {
  it('accepts the plan table ids only', () => {
    expect(['free', 'solo', 'agency'].every(isPlanId)).toBe(true);
    expect(isPlanId('enterprise')).toBe(false);
    expect(isPlanId('constructor')).toBe(false);
    expect(isPlanId(undefined)).toBe(false);
  });

  it('tells the plans one can buy', () => {
    expect(['solo', 'agency'].every(isPaidPlanId)).toBe(true);
    expect(isPaidPlanId('free')).toBe(false);
  });
});

describe('subscriptionKeepsPlan', () => {
  it('is true for paying statuses only, and false without a subscription', () => {
    expect(subscriptionKeepsPlan('active')).toBe(true);
    expect(subscriptionKeepsPlan('canceled')).toBe(false);
    expect(subscriptionKeepsPlan(null)).toBe(false);
  });
});
