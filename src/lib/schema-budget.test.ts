import { afterEach, describe, expect, it } from 'vitest';
import {
  checkCost,
  INLINE_COST_LIMIT,
  SchemaChecker,
  SchemaChecksUnavailableError,
  TIMED_OUT_MESSAGE,
} from './schema-budget.js';

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

  it('refuses costly checks beyond the 32 waiting as unavailable (503), and every check once closed', async () => {
    const busy = new SchemaChecker(60_000);
    checker = busy;
    const costly = Array.from({ length: 2_000 }, () => 'dana@example.com');
    // Two run, 32 wait: the 35th is refused at once, the others all answer.
    const checks = Array.from({ length: 35 }, () => busy.check(EMAILS, costly));
    const settled = await Promise.allSettled(checks);
    const refused = settled.filter((s) => s.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect((refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(SchemaChecksUnavailableError);
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(34);
    await busy.close();
    await expect(busy.check(EMAILS, costly)).rejects.toBeInstanceOf(SchemaChecksUnavailableError);
    // Cheap values need no worker: still checked inline.
    expect(await busy.check(EMAILS, ['a@b.co'])).toEqual({ kind: 'valid' });
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
