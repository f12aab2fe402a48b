import { afterEach, describe, expect, it } from 'vitest';
import { checkCost, INLINE_COST_LIMIT, SchemaChecker, TIMED_OUT_MESSAGE } from './schema-budget.js';

/** 23 subschemas: 20 `email` branches, the first of which passes for a valid address. */
const EMAILS = {
  type: 'array',
  items: { anyOf: Array.from({ length: 20 }, () => ({ type: 'string', format: 'email' })) },
};
/** 421 subschemas: 20 × 20 `format` branches, all tried for a string that matches none. */
const COSTLY = {
  type: 'array',
  items: {
    anyOf: Array.from({ length: 20 }, () => ({
      anyOf: Array.from({ length: 20 }, () => ({ type: 'string', format: 'email' })),
    })),
  },
};

describe('SchemaChecker', () => {
  let checker: SchemaChecker | undefined;
  afterEach(async () => checker?.close());

  it('checks cheap values inline and costly ones in a worker, with the same answers', async () => {
    checker = new SchemaChecker(60_000);
    const costly = Array.from({ length: 2_000 }, () => 'dana@example.com');
    expect(checkCost(EMAILS, ['a@b.co'])).toBeLessThanOrEqual(INLINE_COST_LIMIT);
    expect(checkCost(EMAILS, costly)).toBeGreaterThan(INLINE_COST_LIMIT);
    expect(await checker.check(EMAILS, ['a@b.co'])).toEqual({ kind: 'valid' });
    expect(checker.counts).toEqual({ inline: 1, worker: 0, overBudget: 0 });
    expect(await checker.check(EMAILS, costly)).toEqual({ kind: 'valid' });
    expect(await checker.message(EMAILS, [...costly, 'nope'])).toContain('/2000 must match format "email"');
    expect(checker.counts).toEqual({ inline: 1, worker: 2, overBudget: 0 });
  });

  it('terminates a check past the budget, and the next check gets a fresh worker (and is refused again)', async () => {
    checker = new SchemaChecker(1);
    const hopeless = Array.from({ length: 9_999 }, () => 'y@');
    expect(await checker.check(COSTLY, hopeless)).toEqual({ kind: 'unchecked', message: TIMED_OUT_MESSAGE });
    expect(await checker.check(COSTLY, hopeless)).toEqual({ kind: 'unchecked', message: TIMED_OUT_MESSAGE });
    expect(checker.counts.overBudget).toBe(2);
  });

  it('answers the synchronous submission checks from checks run beforehand', async () => {
    checker = new SchemaChecker(1);
    const hopeless = Array.from({ length: 9_999 }, () => 'y@');
    const validate = await checker.prepared([
      { schema: COSTLY, value: hopeless },
      { schema: EMAILS, value: ['a@b.co'] },
    ]);
    expect(validate(COSTLY, hopeless)).toBe(TIMED_OUT_MESSAGE);
    expect(validate(EMAILS, ['a@b.co'])).toBeUndefined();
    // Not checked beforehand: cheap is checked now, costly is not run on the caller's thread.
    expect(validate(EMAILS, ['x'])).toContain('must match format');
    expect(validate(COSTLY, [...hopeless.slice(1), 'z@'])).toContain('send it again');
  });
});
