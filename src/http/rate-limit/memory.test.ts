import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MINUTE,
  ReferenceLimiter,
  SECOND,
  T0,
  run,
  runReference,
  type Hit,
} from '../../../test/helpers/rate-limit-model.js';
import { WINDOW_MS } from './limiter.js';
import { MemoryRateLimiter } from './memory.js';

/** Steps between requests, weighted towards the window's edges where off-by-one bugs live. */
const gapArb = fc.oneof(
  fc.constantFrom(0, 1, SECOND, WINDOW_MS - 1, WINDOW_MS, WINDOW_MS + 1),
  fc.integer({ min: 0, max: 5 * MINUTE }),
  fc.integer({ min: 0, max: 2 * WINDOW_MS }),
);

/** Non-decreasing request times from T0, one bucket, one limit. */
function timesFrom(gaps: number[]): number[] {
  let t = T0;
  return gaps.map((gap) => (t += gap));
}

let limiters: MemoryRateLimiter[] = [];
function newLimiter(): MemoryRateLimiter {
  const limiter = new MemoryRateLimiter();
  limiters.push(limiter);
  return limiter;
}
afterEach(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  limiters = [];
});

describe('MemoryRateLimiter', () => {
  it('allows exactly `limit` requests in the window, then rejects with exact reset and retry times', async () => {
    const limiter = newLimiter();
    const oldest = T0 + 250;
    const decisions = await run(
      limiter,
      [0, 1, 2, 3, 4].map((i) => ({ bucket: 'k', limit: 5, at: oldest + i * MINUTE })),
    );
    const resetAt = Math.ceil((oldest + WINDOW_MS) / 1000);
    expect(resetAt).toBe((T0 + WINDOW_MS) / 1000 + 1);
    expect(decisions).toEqual(
      [4, 3, 2, 1, 0].map((remaining) => ({
        allowed: true,
        limit: 5,
        remaining,
        resetAt,
        retryAfterSeconds: 0,
      })),
    );

    // 10 minutes and 500 ms later: 49 min 59.75 s until the oldest leaves, rounded up.
    const rejected = await limiter.hit('k', 5, T0 + 10 * MINUTE + 500);
    expect(rejected).toEqual({ allowed: false, limit: 5, remaining: 0, resetAt, retryAfterSeconds: 3000 });
    // A rejected request is not recorded: the same answer again, and the oldest still frees the slot.
    expect(await limiter.hit('k', 5, T0 + 59 * MINUTE)).toMatchObject({
      allowed: false,
      retryAfterSeconds: 61,
    });
    expect(await limiter.hit('k', 5, oldest + WINDOW_MS)).toEqual({
      allowed: true,
      limit: 5,
      remaining: 0,
      resetAt: Math.ceil((oldest + MINUTE + WINDOW_MS) / 1000),
      retryAfterSeconds: 0,
    });
  });

  it('slides: a request leaves exactly one window after it was made, never with a clock hour', async () => {
    const limiter = newLimiter();
    const allowedAt = async (offsetMs: number) => (await limiter.hit('k', 3, T0 + offsetMs)).allowed;
    expect(await allowedAt(0)).toBe(true);
    expect(await allowedAt(59 * MINUTE)).toBe(true);
    expect(await allowedAt(59 * MINUTE + SECOND)).toBe(true);
    expect(await allowedAt(59 * MINUTE + 2 * SECOND)).toBe(false);
    expect(await allowedAt(WINDOW_MS - 1)).toBe(false);
    // The request at 0 leaves at 60:00 exactly; the two at 59:00 and 59:01 are still in.
    expect(await allowedAt(WINDOW_MS)).toBe(true);
    expect(await allowedAt(WINDOW_MS + 1)).toBe(false);
    // 01:00 → 01:59 is a new clock hour, but 59:00, 59:01 and 60:00 are all still within 60 minutes.
    expect(await allowedAt(WINDOW_MS + 58 * MINUTE)).toBe(false);
    expect(await allowedAt(WINDOW_MS + 59 * MINUTE - 1)).toBe(false);
    expect(await allowedAt(WINDOW_MS + 59 * MINUTE)).toBe(true);
  });

  it('does not let two bursts straddling the hour both pass (the fixed-window double burst)', async () => {
    const limiter = newLimiter();
    const limit = 10;
    const before = T0 + 59 * MINUTE + 59 * SECOND; // 00:59:59
    const after = T0 + WINDOW_MS + SECOND; // 01:00:01
    const first = await run(
      limiter,
      Array.from({ length: limit }, () => ({ bucket: 'k', limit, at: before })),
    );
    const second = await run(
      limiter,
      Array.from({ length: limit }, () => ({ bucket: 'k', limit, at: after })),
    );
    expect(first.every((d) => d.allowed)).toBe(true);
    expect(second.filter((d) => d.allowed)).toHaveLength(0);
    // The slot frees when the 00:59:59 burst leaves, at 01:59:59: 3598 s after 01:00:01.
    expect(second.every((d) => d.retryAfterSeconds === 3598)).toBe(true);
    expect(second.every((d) => d.resetAt === (before + WINDOW_MS) / 1000)).toBe(true);
    expect((await limiter.hit('k', limit, before + WINDOW_MS)).allowed).toBe(true);
  });

  it('allows a request at exactly oldest + window, not a millisecond earlier', async () => {
    const limiter = newLimiter();
    expect((await limiter.hit('k', 1, T0)).allowed).toBe(true);
    const early = await limiter.hit('k', 1, T0 + WINDOW_MS - 1);
    expect(early).toMatchObject({ allowed: false, retryAfterSeconds: 1, resetAt: (T0 + WINDOW_MS) / 1000 });
    expect(await limiter.hit('k', 1, T0 + WINDOW_MS)).toEqual({
      allowed: true,
      limit: 1,
      remaining: 0,
      resetAt: (T0 + 2 * WINDOW_MS) / 1000,
      retryAfterSeconds: 0,
    });
  });

  describe('when the limit of a bucket changes', () => {
    it('grows: keeps the recorded times and allows up to the new limit', async () => {
      const limiter = newLimiter();
      await run(limiter, [
        { bucket: 'k', limit: 2, at: T0 },
        { bucket: 'k', limit: 2, at: T0 + MINUTE },
      ]);
      expect((await limiter.hit('k', 2, T0 + 2 * MINUTE)).allowed).toBe(false);
      expect(await limiter.hit('k', 4, T0 + 3 * MINUTE)).toEqual({
        allowed: true,
        limit: 4,
        remaining: 1,
        resetAt: (T0 + WINDOW_MS) / 1000,
        retryAfterSeconds: 0,
      });
      expect(await limiter.hit('k', 4, T0 + 4 * MINUTE)).toMatchObject({ allowed: true, remaining: 0 });
      expect(await limiter.hit('k', 4, T0 + 5 * MINUTE)).toMatchObject({
        allowed: false,
        resetAt: (T0 + WINDOW_MS) / 1000,
      });
    });

    it('shrinks: the newest times decide, and the slot frees when the count drops below the new limit', async () => {
      const limiter = newLimiter();
      await run(
        limiter,
        [0, 1, 2, 3, 4].map((i) => ({ bucket: 'k', limit: 5, at: T0 + i * MINUTE })),
      );
      // 5 in the window, limit now 2: a slot frees when only 1 is left, i.e. when the one at 3:00 leaves.
      expect(await limiter.hit('k', 2, T0 + 10 * MINUTE)).toEqual({
        allowed: false,
        limit: 2,
        remaining: 0,
        resetAt: (T0 + 3 * MINUTE + WINDOW_MS) / 1000,
        retryAfterSeconds: (3 * MINUTE + WINDOW_MS - 10 * MINUTE) / 1000,
      });
      // The requests at 0:00 and 1:00 have left, but 2:00, 3:00 and 4:00 have not.
      expect((await limiter.hit('k', 2, T0 + MINUTE + WINDOW_MS)).allowed).toBe(false);
      expect((await limiter.hit('k', 2, T0 + 3 * MINUTE + WINDOW_MS - 1)).allowed).toBe(false);
      expect(await limiter.hit('k', 2, T0 + 3 * MINUTE + WINDOW_MS)).toMatchObject({
        allowed: true,
        remaining: 0,
        resetAt: (T0 + 4 * MINUTE + WINDOW_MS) / 1000,
      });
    });

    it('shrinks then grows back without forgetting requests still in the window', async () => {
      const limiter = newLimiter();
      await run(
        limiter,
        [0, 1, 2, 3, 4].map((i) => ({ bucket: 'k', limit: 5, at: T0 + i * MINUTE })),
      );
      expect((await limiter.hit('k', 3, T0 + 5 * MINUTE)).allowed).toBe(false);
      // Back to 5: all five requests are still within the last 60 minutes, so there is no room.
      expect(await limiter.hit('k', 5, T0 + 6 * MINUTE)).toEqual({
        allowed: false,
        limit: 5,
        remaining: 0,
        resetAt: (T0 + WINDOW_MS) / 1000,
        retryAfterSeconds: (WINDOW_MS - 6 * MINUTE) / 1000,
      });
      expect((await limiter.hit('k', 6, T0 + 7 * MINUTE)).allowed).toBe(true);
      expect((await limiter.hit('k', 6, T0 + 8 * MINUTE)).allowed).toBe(false);
    });
  });

  it('answers exactly even when the clock steps back (a request time older than the newest)', async () => {
    const limiter = newLimiter();
    const reference = new ReferenceLimiter();
    const hits: Hit[] = [
      { bucket: 'k', limit: 2, at: T0 + 10 * MINUTE },
      { bucket: 'k', limit: 2, at: T0 }, // wall clock stepped back 10 minutes
      { bucket: 'k', limit: 2, at: T0 + 20 * MINUTE },
      // The request at T0 has left; the one at 10:00 has not: one slot is free.
      { bucket: 'k', limit: 2, at: T0 + WINDOW_MS },
      { bucket: 'k', limit: 2, at: T0 + WINDOW_MS + 1 },
    ];
    const decisions = await run(limiter, hits);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, true, false]);
    expect(decisions).toEqual(hits.map((h) => reference.hit(h.bucket, h.limit, h.at)));
  });

  it('keeps buckets independent', async () => {
    const limiter = newLimiter();
    await run(limiter, [
      { bucket: 'a', limit: 2, at: T0 },
      { bucket: 'a', limit: 2, at: T0 + 1 },
    ]);
    expect((await limiter.hit('a', 2, T0 + 2)).allowed).toBe(false);
    expect(await limiter.hit('b', 2, T0 + 3)).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetAt: Math.ceil((T0 + 3 + WINDOW_MS) / 1000),
      retryAfterSeconds: 0,
    });
    expect((await limiter.hit('a', 2, T0 + 4)).allowed).toBe(false);
    expect(await limiter.hit('b', 2, T0 + 5)).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.bucketCount).toBe(2);
  });

  it('sweeps buckets whose requests have all left the window, and only those', async () => {
    const limiter = newLimiter();
    await limiter.hit('a', 2, T0);
    await limiter.hit('b', 2, T0 + 30 * MINUTE);
    await limiter.hit('c', 0, T0); // rejected: nothing recorded, swept with the first pass
    expect(limiter.bucketCount).toBe(3);
    limiter.sweep(T0 + WINDOW_MS - 1);
    expect(limiter.bucketCount).toBe(2);
    limiter.sweep(T0 + WINDOW_MS);
    expect(limiter.bucketCount).toBe(1);
    limiter.sweep(T0 + 30 * MINUTE + WINDOW_MS - 1);
    expect(limiter.bucketCount).toBe(1);
    // 'b' survived with its request: one slot left.
    expect(await limiter.hit('b', 2, T0 + 30 * MINUTE + WINDOW_MS - 1)).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    limiter.sweep(T0 + 30 * MINUTE + 2 * WINDOW_MS);
    expect(limiter.bucketCount).toBe(0);
    // A swept bucket starts afresh.
    expect(await limiter.hit('a', 2, T0 + 3 * WINDOW_MS)).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.bucketCount).toBe(1);
  });

  it('rejects everything with a limit of 0', async () => {
    const limiter = newLimiter();
    expect(await limiter.hit('k', 0, T0)).toEqual({
      allowed: false,
      limit: 0,
      remaining: 0,
      resetAt: (T0 + WINDOW_MS) / 1000,
      retryAfterSeconds: WINDOW_MS / 1000,
    });
  });

  describe('properties (fast-check)', () => {
    it('decides exactly as the naive model for one bucket and a fixed limit', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 8 }),
          fc.array(gapArb, { minLength: 1, maxLength: 80 }),
          async (limit, gaps) => {
            const hits = timesFrom(gaps).map((at) => ({ bucket: 'k', limit, at }));
            const limiter = new MemoryRateLimiter();
            try {
              expect(await run(limiter, hits)).toEqual(runReference(hits));
            } finally {
              await limiter.close();
            }
          },
        ),
        { numRuns: 300 },
      );
    });

    it('never allows more than `limit` requests in any 60-minute span', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.array(fc.oneof(fc.constantFrom(0, 1, WINDOW_MS - 1, WINDOW_MS), fc.nat(20 * MINUTE)), {
            minLength: 1,
            maxLength: 120,
          }),
          async (limit, gaps) => {
            const times = timesFrom(gaps);
            const limiter = new MemoryRateLimiter();
            try {
              const allowed: number[] = [];
              for (const at of times) if ((await limiter.hit('k', limit, at)).allowed) allowed.push(at);
              // Every span (t − 60 min, t] ending at an allowed request holds at most `limit` of them.
              for (const end of allowed) {
                expect(allowed.filter((t) => t > end - WINDOW_MS && t <= end).length).toBeLessThanOrEqual(
                  limit,
                );
              }
              // And it is not merely stricter: a request is rejected only when the window is full.
              const reference = runReference(times.map((at) => ({ bucket: 'k', limit, at })));
              expect(allowed).toEqual(times.filter((_, i) => reference[i]?.allowed));
            } finally {
              await limiter.close();
            }
          },
        ),
        { numRuns: 300 },
      );
    });

    it('decides exactly as the naive model with several buckets, changing limits and clock steps back', async () => {
      const hitArb = fc.record({
        bucket: fc.constantFrom('a', 'b', 'c'),
        // Up to 40: past the buffer's initial 16 slots, so its growth is exercised too.
        limit: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 15, max: 40 })),
        gap: fc.oneof(gapArb, fc.integer({ min: -10 * MINUTE, max: 0 })),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(hitArb, { minLength: 1, maxLength: 100 }), async (steps) => {
          let t = T0;
          const hits = steps.map(({ bucket, limit, gap }) => ({ bucket, limit, at: (t += gap) }));
          const limiter = new MemoryRateLimiter();
          try {
            expect(await run(limiter, hits)).toEqual(runReference(hits));
          } finally {
            await limiter.close();
          }
        }),
        { numRuns: 500 },
      );
    });
  });
});
