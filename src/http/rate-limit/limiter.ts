import type { MaybePromise } from '../../lib/maybe-promise.js';

/** An exact rolling 60-minute window, kept as a sliding log of request times per bucket. */
export const WINDOW_MS = 60 * 60 * 1000;

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /**
   * Unix seconds at which a slot frees up: when the oldest request in the window leaves it (or, after
   * the limit was lowered below the count, the request whose departure brings the count below it).
   */
  resetAt: number;
  /** Seconds until a rejected request may be retried; 0 when allowed. */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /**
   * Records one request in `bucket` at `nowMs` if the window has room; says whether it did. The
   * in-process limiter answers at once (it runs before every authenticated answer), Redis later.
   */
  hit(bucket: string, limit: number, nowMs: number): MaybePromise<RateLimitDecision>;
  /** How many requests `bucket` holds in the window ending at `nowMs`, recording nothing (dashboard usage). */
  used(bucket: string, nowMs: number): Promise<number>;
  /** Throws when the backend cannot be reached (readiness probe). */
  check(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Which request, counted from the oldest (0) of the `count` in the window, has to leave it for the
 * count to drop below `limit`: the oldest, unless the limit was lowered below the count.
 */
export function freeingIndex(count: number, limit: number): number {
  return Math.max(0, Math.min(count - 1, count - limit));
}

/** `freeingMs`: the time of the request at `freeingIndex` (now when the window is empty). */
export function decide(
  allowed: boolean,
  limit: number,
  countInWindow: number,
  freeingMs: number,
  nowMs: number,
): RateLimitDecision {
  const freesAtMs = freeingMs + WINDOW_MS;
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - countInWindow),
    resetAt: Math.ceil(freesAtMs / 1000),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((freesAtMs - nowMs) / 1000)),
  };
}
