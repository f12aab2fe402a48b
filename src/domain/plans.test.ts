import { describe, expect, it } from 'vitest';
import { PLAN_IDS, PLANS, planOf, rateLimitFor } from './plans.js';
import { hasScope, SCOPES, scopesNotHeld } from './scopes.js';

describe('PLANS', () => {
  it('has the SPEC rate limits: free 60, solo 600, agency 3000 per hour', () => {
    expect(PLANS.free.rate_limit_per_hour).toBe(60);
    expect(PLANS.solo.rate_limit_per_hour).toBe(600);
    expect(PLANS.agency.rate_limit_per_hour).toBe(3000);
  });

  it('lists every plan under its own id', () => {
    expect(Object.keys(PLANS)).toEqual([...PLAN_IDS]);
    for (const id of PLAN_IDS) expect(PLANS[id].id).toBe(id);
  });

  it('grows with the price', () => {
    const [free, solo, agency] = PLAN_IDS.map((id) => PLANS[id]);
    expect(free?.price_monthly_usd).toBe(0);
    for (const [lower, higher] of [
      [free, solo],
      [solo, agency],
    ] as const) {
      expect(lower && higher).toBeTruthy();
      if (!lower || !higher) continue;
      expect(higher.price_monthly_usd).toBeGreaterThan(lower.price_monthly_usd);
      expect(higher.rate_limit_per_hour).toBeGreaterThan(lower.rate_limit_per_hour);
      expect(higher.quotas.intakes_per_month).toBeGreaterThan(lower.quotas.intakes_per_month);
      expect(higher.quotas.storage_bytes).toBeGreaterThan(lower.quotas.storage_bytes);
      expect(higher.max_file_bytes).toBeGreaterThan(lower.max_file_bytes);
    }
  });

  it('keeps SMS chases off the free plan', () => {
    expect(PLANS.free.features.sms_chases).toBe(false);
    expect(PLANS.free.quotas.sms_per_month).toBe(0);
    expect(PLANS.solo.features.sms_chases).toBe(true);
  });
});

describe('planOf', () => {
  it.each(PLAN_IDS)('returns the %s plan', (id) => {
    expect(planOf(id)).toBe(PLANS[id]);
  });

  it.each(['enterprise', '', 'FREE', 'Solo', 'constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'falls back to free for the unknown id %j',
    (id) => {
      expect(planOf(id)).toBe(PLANS.free);
    },
  );
});

describe('rateLimitFor', () => {
  it('uses the plan when there is no override', () => {
    expect(rateLimitFor({ plan: 'free', rate_limit_per_hour: null })).toBe(60);
    expect(rateLimitFor({ plan: 'solo', rate_limit_per_hour: null })).toBe(600);
    expect(rateLimitFor({ plan: 'agency', rate_limit_per_hour: null })).toBe(3000);
  });

  it('prefers the contract override to the plan, higher or lower', () => {
    expect(rateLimitFor({ plan: 'free', rate_limit_per_hour: 10_000 })).toBe(10_000);
    expect(rateLimitFor({ plan: 'agency', rate_limit_per_hour: 5 })).toBe(5);
    expect(rateLimitFor({ plan: 'solo', rate_limit_per_hour: 0 })).toBe(0);
  });

  it('uses the free limit for an unknown plan', () => {
    expect(rateLimitFor({ plan: 'platinum', rate_limit_per_hour: null })).toBe(60);
    expect(rateLimitFor({ plan: 'constructor', rate_limit_per_hour: null })).toBe(60);
  });
});

describe('hasScope', () => {
  it('admin includes every scope', () => {
    for (const scope of SCOPES) expect(hasScope(['admin'], scope)).toBe(true);
  });

  it('a listed scope is held, others are not', () => {
    expect(hasScope(['intakes:read'], 'intakes:read')).toBe(true);
    expect(hasScope(['intakes:read'], 'intakes:write')).toBe(false);
    expect(hasScope(['intakes:read', 'intakes:write'], 'secrets:read')).toBe(false);
    expect(hasScope(['intakes:write'], 'admin')).toBe(false);
    expect(hasScope([], 'intakes:read')).toBe(false);
  });

  it('write does not imply read, and no prefix matching', () => {
    expect(hasScope(['intakes:write'], 'intakes:read')).toBe(false);
    expect(hasScope(['intakes'], 'intakes:read')).toBe(false);
    expect(hasScope(['Admin'], 'intakes:read')).toBe(false);
  });
});

describe('scopesNotHeld', () => {
  it('an admin creator may hand out anything', () => {
    expect(scopesNotHeld(['admin'], ['admin', 'secrets:read', 'intakes:write'])).toEqual([]);
  });

  it('lists the requested scopes the creator lacks, in request order', () => {
    expect(scopesNotHeld(['intakes:read'], ['secrets:read', 'intakes:read', 'admin'])).toEqual([
      'secrets:read',
      'admin',
    ]);
  });

  it('is empty when every requested scope is held, or none is requested', () => {
    expect(scopesNotHeld(['intakes:read', 'intakes:write'], ['intakes:write'])).toEqual([]);
    expect(scopesNotHeld(['intakes:read'], [])).toEqual([]);
  });

  it('reports everything for a creator without scopes', () => {
    expect(scopesNotHeld([], ['intakes:read'])).toEqual(['intakes:read']);
  });
});

describe('SCOPES', () => {
  it('lists the four scopes', () => {
    expect(SCOPES).toEqual(['admin', 'intakes:read', 'intakes:write', 'secrets:read']);
  });
});
