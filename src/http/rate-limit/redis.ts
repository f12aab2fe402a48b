import { randomBytes } from 'node:crypto';
import { Redis, type Result } from 'ioredis';
import { WINDOW_MS, decide, type RateLimitDecision, type RateLimiter } from './limiter.js';

/**
 * The same sliding log as MemoryRateLimiter, as a sorted set per bucket, updated by one Lua script
 * per request so that any number of processes share one exact count.
 * Returns {allowed, count in window, time of the request whose departure frees a slot}: the oldest,
 * unless the limit was lowered below the count (see freeingIndex).
 */
const SLIDING_LOG_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', KEYS[1], window)
local index = math.max(0, math.min(count - 1, count - limit))
local freeing = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
local freeingScore = tostring(now)
if freeing[2] then freeingScore = freeing[2] end
return {allowed, count, freeingScore}
`;

type SlidingLogReply = [number, number, string];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    slidingLogHit(
      key: string,
      nowMs: number,
      windowMs: number,
      limit: number,
      member: string,
    ): Result<SlidingLogReply, Context>;
  }
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  /** The latest connection error, kept for diagnostics. */
  lastError: Error | undefined;

  constructor(
    url: string,
    private readonly keyPrefix = 'intake:ratelimit:',
  ) {
    this.redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    // Connection errors surface where they matter (a failed hit, /readyz); ioredis keeps reconnecting.
    this.redis.on('error', (error: Error) => {
      this.lastError = error;
    });
    this.redis.defineCommand('slidingLogHit', { numberOfKeys: 1, lua: SLIDING_LOG_SCRIPT });
  }

  async hit(bucket: string, limit: number, nowMs: number): Promise<RateLimitDecision> {
    const member = `${nowMs}:${randomBytes(6).toString('hex')}`;
    const [allowed, count, freeing] = await this.redis.slidingLogHit(
      this.keyPrefix + bucket,
      nowMs,
      WINDOW_MS,
      limit,
      member,
    );
    return decide(allowed === 1, limit, count, Number(freeing), nowMs);
  }

  async used(bucket: string, nowMs: number): Promise<number> {
    // Times at or before now − window have left it (the hit script removes them the same way).
    return this.redis.zcount(this.keyPrefix + bucket, `(${nowMs - WINDOW_MS}`, '+inf');
  }

  async check(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    // QUIT needs a live connection; a client still trying to connect is just dropped.
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }
}
