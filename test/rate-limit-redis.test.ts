import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WINDOW_MS, type RateLimitDecision } from '../src/http/rate-limit/limiter.js';
import { MemoryRateLimiter } from '../src/http/rate-limit/memory.js';
import { RedisRateLimiter } from '../src/http/rate-limit/redis.js';
import { hashApiKey } from '../src/modules/keys/keys.domain.js';
import { findActiveKeyByHash } from '../src/modules/keys/keys.repository.js';
import { TEST_REDIS_URL, serviceAvailable } from './helpers/env.js';
import { MINUTE, ReferenceLimiter, SECOND, T0, run } from './helpers/rate-limit-model.js';
import { client } from './helpers/http.js';
import { expectError } from './helpers/security.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const available = await serviceAvailable('redis');

/** The prefix the service itself uses (RedisRateLimiter's default). */
const SERVICE_PREFIX = 'intake:ratelimit:';

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  const keys = await redis.keys(pattern);
  if (keys.length > 0) await redis.del(...keys);
}

describe.skipIf(!available)('RedisRateLimiter against a real Redis', () => {
  /** Unique per run, so parallel runs and the service's own keys are never touched. */
  const prefix = `intake-test:ratelimit:${process.pid}:${randomBytes(4).toString('hex')}:`;
  let redis: Redis;
  let first: RedisRateLimiter;
  let second: RedisRateLimiter;
  let bucketCounter = 0;
  const bucket = (name: string) => `${name}-${bucketCounter++}`;

  beforeAll(() => {
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    // Two instances on two connections, as two processes of the service would have.
    first = new RedisRateLimiter(TEST_REDIS_URL, prefix);
    second = new RedisRateLimiter(TEST_REDIS_URL, prefix);
  });

  afterAll(async () => {
    if (!redis) return;
    await deleteKeys(redis, `${prefix}*`);
    expect(await redis.keys(`${prefix}*`)).toEqual([]);
    await Promise.all([first.close(), second.close(), redis.quit()]);
  });

  it('answers the readiness check', async () => {
    await expect(first.check()).resolves.toBeUndefined();
  });

  it('makes the same decisions as the memory limiter and the naive model for a fixed sequence', async () => {
    const k = bucket('fixed');
    const offsets = [
      0,
      59 * MINUTE,
      59 * MINUTE + SECOND,
      59 * MINUTE + 2 * SECOND,
      WINDOW_MS - 1,
      WINDOW_MS,
      WINDOW_MS + 1,
      WINDOW_MS + 59 * MINUTE,
    ];
    const hits = offsets.map((offset) => ({ bucket: k, limit: 3, at: T0 + offset }));
    const memory = new MemoryRateLimiter();
    const reference = new ReferenceLimiter();
    try {
      const fromRedis = await run(first, hits);
      expect(fromRedis.map((d) => d.allowed)).toEqual([true, true, true, false, false, true, false, true]);
      expect(fromRedis[3]).toEqual({
        allowed: false,
        limit: 3,
        remaining: 0,
        resetAt: (T0 + WINDOW_MS) / 1000,
        retryAfterSeconds: 58,
      });
      expect(fromRedis).toEqual(await run(memory, hits));
      expect(fromRedis).toEqual(hits.map((h) => reference.hit(h.bucket, h.limit, h.at)));
      // Only the allowed requests are stored, and only those still in the last window.
      expect(await redis.zcard(prefix + k)).toBe(3);
      const ttl = await redis.pttl(prefix + k);
      expect(ttl).toBeGreaterThan(WINDOW_MS - 60 * SECOND);
      expect(ttl).toBeLessThanOrEqual(WINDOW_MS);
    } finally {
      await memory.close();
    }
  });

  it('makes the same decisions as the memory limiter for random sequences (fast-check)', async () => {
    const gapArb = fc.oneof(
      fc.constantFrom(0, 1, SECOND, WINDOW_MS - 1, WINDOW_MS, WINDOW_MS + 1),
      fc.integer({ min: 0, max: 5 * MINUTE }),
      fc.integer({ min: 0, max: 2 * WINDOW_MS }),
      fc.integer({ min: -5 * MINUTE, max: 0 }), // a clock stepping back, or another process's clock
    );
    const stepArb = fc.record({
      bucket: fc.constantFrom('a', 'b'),
      limit: fc.integer({ min: 0, max: 5 }),
      gap: gapArb,
    });
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (steps) => {
        const run_ = bucket('random');
        let t = T0;
        const hits = steps.map(({ bucket: b, limit, gap }) => ({
          bucket: `${run_}-${b}`,
          limit,
          at: (t += gap),
        }));
        const memory = new MemoryRateLimiter();
        const reference = new ReferenceLimiter();
        try {
          // Alternate the two Redis instances: the decisions must not depend on which one answers.
          const fromRedis: RateLimitDecision[] = [];
          for (const [i, h] of hits.entries()) {
            fromRedis.push(await (i % 2 === 0 ? first : second).hit(h.bucket, h.limit, h.at));
          }
          expect(fromRedis).toEqual(await run(memory, hits));
          expect(fromRedis).toEqual(hits.map((h) => reference.hit(h.bucket, h.limit, h.at)));
        } finally {
          await memory.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('shares one count between two instances: limit 5, alternating, the 6th is rejected', async () => {
    const k = bucket('shared');
    const decisions: RateLimitDecision[] = [];
    for (let i = 0; i < 6; i++) {
      decisions.push(await (i % 2 === 0 ? first : second).hit(k, 5, T0 + i * SECOND));
    }
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 4],
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(decisions[5]).toMatchObject({
      resetAt: (T0 + WINDOW_MS) / 1000,
      retryAfterSeconds: WINDOW_MS / 1000 - 5,
    });
    // The other instance sees the same full window, and the same oldest request leaving it.
    expect(await first.hit(k, 5, T0 + WINDOW_MS - 1)).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    expect(await second.hit(k, 5, T0 + WINDOW_MS)).toMatchObject({ allowed: true, remaining: 0 });
    expect(await redis.zcard(prefix + k)).toBe(5);
  });

  it('after the limit is lowered, retries when the count drops below it, not when the oldest leaves', async () => {
    const k = bucket('lowered');
    await run(
      first,
      [0, 1, 2, 3, 4].map((i) => ({ bucket: k, limit: 5, at: T0 + i * MINUTE })),
    );
    // 5 in the window, limit now 2: the slot frees when the request at 3:00 leaves (only 4:00 left).
    const lowered = await second.hit(k, 2, T0 + 10 * MINUTE);
    expect(lowered).toEqual({
      allowed: false,
      limit: 2,
      remaining: 0,
      resetAt: (T0 + 3 * MINUTE + WINDOW_MS) / 1000,
      retryAfterSeconds: (3 * MINUTE + WINDOW_MS - 10 * MINUTE) / 1000,
    });
    // Retrying when the oldest leaves (what a 0:00-based Retry-After would say) is still too early.
    expect((await first.hit(k, 2, T0 + WINDOW_MS)).allowed).toBe(false);
    expect((await first.hit(k, 2, T0 + 3 * MINUTE + WINDOW_MS - 1)).allowed).toBe(false);
    expect((await second.hit(k, 2, T0 + 3 * MINUTE + WINDOW_MS)).allowed).toBe(true);
    // Raised back to 5 within the window: the requests at 4:00 and 63:00 are still counted.
    expect(await first.hit(k, 5, T0 + 3 * MINUTE + WINDOW_MS + 1)).toMatchObject({
      allowed: true,
      remaining: 2,
    });
  });

  it('allows exactly `limit` of 50 concurrent requests across two instances', async () => {
    const k = bucket('concurrent');
    const now = Date.now();
    const decisions = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? first : second).hit(k, 20, now)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(20);
    expect(decisions.filter((d) => !d.allowed)).toHaveLength(30);
    // Each allowed request saw a distinct count: remaining 19 … 0, once each.
    expect(
      decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfterSeconds === WINDOW_MS / 1000)).toBe(
      true,
    );
    expect(await redis.zcard(prefix + k)).toBe(20);
  });

  describe('through HTTP, with the server configured with REDIS_URL', () => {
    let server: TestServer;
    const createdKeys: string[] = [];

    beforeAll(async () => {
      server = await startTestServer('sqlite', { REDIS_URL: TEST_REDIS_URL });
    });

    afterAll(async () => {
      // Only the buckets of the keys this test created, which are random and unique.
      if (createdKeys.length > 0) await redis.del(...createdKeys.map((id) => SERVICE_PREFIX + id));
      await server?.stop();
    });

    it('rejects the 4th request of an account limited to 3 per hour with 429, from Redis', async () => {
      const account = await server.createAccount({ rateLimitPerHour: 3 });
      const db = server.server.services.db.kysely;
      const liveKeyId = (await findActiveKeyByHash(db, hashApiKey(account.live_key)))?.key.id;
      const testKeyId = (await findActiveKeyByHash(db, hashApiKey(account.test_key)))?.key.id;
      expect(liveKeyId).toMatch(/\S/);
      expect(testKeyId).toMatch(/\S/);
      if (!liveKeyId || !testKeyId) return;
      createdKeys.push(liveKeyId, testKeyId);

      const live = client(server.url, account.live_key);
      for (const remaining of [2, 1, 0]) {
        const ok = await live.get('/v1/account');
        expect(ok.status, ok.text).toBe(200);
        expect(ok.headers.get('x-ratelimit-limit')).toBe('3');
        expect(ok.headers.get('x-ratelimit-remaining')).toBe(String(remaining));
      }
      const limited = await live.get('/v1/account');
      expectError(limited, 429, 'rate_limited');
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(WINDOW_MS / 1000 - 60);
      expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / 1000);
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);

      // The count lives in Redis under the key id: another process (a second limiter) sees it.
      expect(await redis.zcard(SERVICE_PREFIX + liveKeyId)).toBe(3);
      const otherProcess = new RedisRateLimiter(TEST_REDIS_URL);
      try {
        expect(await otherProcess.hit(liveKeyId, 3, Date.now())).toMatchObject({
          allowed: false,
          remaining: 0,
        });
      } finally {
        await otherProcess.close();
      }

      // The test key is its own bucket: test traffic does not eat live quota, nor the reverse.
      const test = client(server.url, account.test_key);
      const fromTest = await test.get('/v1/account');
      expect(fromTest.status, fromTest.text).toBe(200);
      expect(fromTest.headers.get('x-ratelimit-remaining')).toBe('2');
      expect(await redis.zcard(SERVICE_PREFIX + testKeyId)).toBe(1);
    });

    it('reports the Redis rate-limit store as ready', async () => {
      const ready = await client(server.url).get('/readyz');
      expect(ready.status, ready.text).toBe(200);
      expect(ready.body).toEqual({
        status: 'ok',
        checks: { database: 'ok', storage: 'ok', email: 'ok', rate_limits: 'ok' },
      });
    });
  });
});
