import type { RateLimitDecision, RateLimiter } from '../../src/http/rate-limit/limiter.js';
import { WINDOW_MS } from '../../src/http/rate-limit/limiter.js';

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
/** 2025-01-01T00:00:00Z: a whole hour, so fixed-window boundaries fall on round numbers. */
export const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);

/**
 * The naive model the limiter must agree with: keep every request time, count those newer than
 * now − window. A slot frees when enough requests leave for the count to drop below the limit
 * (the oldest one, unless the limit was lowered below the count).
 */
export class ReferenceLimiter {
  private readonly logs = new Map<string, number[]>();

  hit(bucket: string, limit: number, nowMs: number): RateLimitDecision {
    const inWindow = (this.logs.get(bucket) ?? []).filter((t) => t > nowMs - WINDOW_MS);
    const allowed = inWindow.length < limit;
    if (allowed) inWindow.push(nowMs);
    inWindow.sort((a, b) => a - b);
    this.logs.set(bucket, inWindow);
    const count = inWindow.length;
    const freeing = inWindow[Math.min(count - 1, Math.max(0, count - limit))] ?? nowMs;
    const freesAt = freeing + WINDOW_MS;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - count),
      resetAt: Math.ceil(freesAt / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((freesAt - nowMs) / 1000)),
    };
  }
}

export interface Hit {
  bucket: string;
  limit: number;
  at: number;
}

/** Sends the hits one after another and collects the decisions. */
export async function run(limiter: RateLimiter, hits: Hit[]): Promise<RateLimitDecision[]> {
  const decisions: RateLimitDecision[] = [];
  for (const hit of hits) decisions.push(await limiter.hit(hit.bucket, hit.limit, hit.at));
  return decisions;
}

/** The reference model's decisions for the same hits. */
export function runReference(hits: Hit[]): RateLimitDecision[] {
  const reference = new ReferenceLimiter();
  return hits.map((hit) => reference.hit(hit.bucket, hit.limit, hit.at));
}
