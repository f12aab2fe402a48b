import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { WINDOW_MS, type RateLimiter } from '../src/http/rate-limit/limiter.js';
import { MemoryRateLimiter } from '../src/http/rate-limit/memory.js';
import { RedisRateLimiter } from '../src/http/rate-limit/redis.js';
import { TEST_REDIS_URL, serviceAvailable } from './helpers/env.js';

/**
 * `used` (the dashboard's "requests this hour") reads a bucket's count in the rolling window without
 * recording a request, in both limiters alike.
 */
const redisAvailable = await serviceAvailable('redis');
const limiters: [string, () => RateLimiter][] = [
  ['memory', () => new MemoryRateLimiter()],
  ...(redisAvailable
    ? [
        [
          'redis',
          () =>
            new RedisRateLimiter(
              TEST_REDIS_URL,
              `intake-test:used:${process.pid}:${randomBytes(4).toString('hex')}:`,
            ),
        ] as [string, () => RateLimiter],
      ]
    : []),
];

describe.each(limiters)('RateLimiter.used (%s)', (_name, make) => {
  const limiter = make();
  afterAll(() => limiter.close());

  it('counts the requests in the window and records nothing itself', async () => {
    const t0 = 1_800_000_000_000;
    expect(await limiter.used('key_a', t0)).toBe(0);
    await limiter.hit('key_a', 10, t0);
    await limiter.hit('key_a', 10, t0 + 1000);
    await limiter.hit('key_b', 10, t0 + 1000);
    expect(await limiter.used('key_a', t0 + 2000)).toBe(2);
    expect(await limiter.used('key_a', t0 + 2000)).toBe(2);
    // The first request leaves the window exactly one window after it was made.
    expect(await limiter.used('key_a', t0 + WINDOW_MS)).toBe(1);
    expect(await limiter.used('key_a', t0 + WINDOW_MS + 1000)).toBe(0);
  });
});
