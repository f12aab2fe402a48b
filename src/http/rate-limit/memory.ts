import { WINDOW_MS, decide, type RateLimitDecision, type RateLimiter } from './limiter.js';

/**
 * The request times of one bucket in a ring buffer sized to the limit: a request is allowed
 * when the buffer has room once the times older than the window are dropped. O(1) per request.
 */
class SlidingLog {
  times: Float64Array;
  start = 0;
  count = 0;

  constructor(capacity: number) {
    this.times = new Float64Array(Math.max(1, capacity));
  }

  private at(i: number): number {
    return this.times[(this.start + i) % this.times.length] ?? 0;
  }

  evictBefore(cutoffMs: number): void {
    while (this.count > 0 && this.at(0) <= cutoffMs) {
      this.start = (this.start + 1) % this.times.length;
      this.count--;
    }
  }

  oldest(fallback: number): number {
    return this.count > 0 ? this.at(0) : fallback;
  }

  push(time: number): void {
    this.times[(this.start + this.count) % this.times.length] = time;
    this.count++;
  }

  /** A new buffer for a changed limit, keeping the newest times that still fit. */
  resized(capacity: number): SlidingLog {
    const next = new SlidingLog(capacity);
    const keep = Math.min(this.count, next.times.length);
    for (let i = this.count - keep; i < this.count; i++) next.push(this.at(i));
    return next;
  }
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly logs = new Map<string, SlidingLog>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.sweep(Date.now()), 10 * 60 * 1000);
    this.sweeper.unref();
  }

  hit(bucket: string, limit: number, nowMs: number): Promise<RateLimitDecision> {
    let log = this.logs.get(bucket);
    if (!log) {
      log = new SlidingLog(limit);
      this.logs.set(bucket, log);
    } else if (log.times.length !== Math.max(1, limit)) {
      log = log.resized(limit);
      this.logs.set(bucket, log);
    }
    log.evictBefore(nowMs - WINDOW_MS);
    const allowed = limit > 0 && log.count < limit;
    if (allowed) log.push(nowMs);
    return Promise.resolve(decide(allowed, limit, log.count, log.oldest(nowMs), nowMs));
  }

  /** Drops buckets whose every request has left the window, so idle keys cost no memory. */
  sweep(nowMs: number): void {
    for (const [bucket, log] of this.logs) {
      log.evictBefore(nowMs - WINDOW_MS);
      if (log.count === 0) this.logs.delete(bucket);
    }
  }

  get bucketCount(): number {
    return this.logs.size;
  }

  check(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
