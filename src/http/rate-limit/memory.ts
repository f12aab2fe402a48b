import { WINDOW_MS, decide, freeingIndex, type RateLimitDecision, type RateLimiter } from './limiter.js';
import type { MaybePromise } from '../../lib/maybe-promise.js';

/**
 * The request times of one bucket, oldest first, in a ring buffer (at most the limit's size): a request is
 * allowed when fewer than `limit` times remain once those older than the window are dropped.
 * O(1) per request while the clock moves forward. After the limit is lowered the buffer keeps every
 * time still in the window (more than the new limit), so raising the limit again forgets nothing.
 */
const INITIAL_CAPACITY = 16;

class SlidingLog {
  times: Float64Array;
  start = 0;
  count = 0;

  constructor(capacity: number) {
    this.times = new Float64Array(Math.max(1, capacity));
  }

  private index(i: number): number {
    return (this.start + i) % this.times.length;
  }

  at(i: number): number {
    return this.times[this.index(i)] ?? 0;
  }

  evictBefore(cutoffMs: number): void {
    while (this.count > 0 && this.at(0) <= cutoffMs) {
      this.start = (this.start + 1) % this.times.length;
      this.count--;
    }
  }

  /** The time whose departure brings the count below `limit` (the oldest, unless the limit was lowered). */
  freeing(limit: number, fallback: number): number {
    return this.count > 0 ? this.at(freeingIndex(this.count, limit)) : fallback;
  }

  /**
   * Inserts in time order. A time older than the newest (the wall clock stepped back) is moved into
   * place, so that eviction from the front still drops exactly the times that left the window.
   */
  push(time: number): void {
    let i = this.count;
    while (i > 0 && this.at(i - 1) > time) {
      this.times[this.index(i)] = this.at(i - 1);
      i--;
    }
    this.times[this.index(i)] = time;
    this.count++;
  }

  /** A new buffer for a changed limit, keeping every recorded time. */
  resized(capacity: number): SlidingLog {
    const next = new SlidingLog(Math.max(capacity, this.count));
    for (let i = 0; i < this.count; i++) next.push(this.at(i));
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

  /** Answers at once (a decision, not a promise of one), typed as the interface allows. */
  hit(bucket: string, limit: number, nowMs: number): MaybePromise<RateLimitDecision> {
    const capacity = Math.max(1, limit);
    let log = this.logs.get(bucket);
    if (!log) {
      log = new SlidingLog(Math.min(capacity, INITIAL_CAPACITY));
      this.logs.set(bucket, log);
    }
    log.evictBefore(nowMs - WINDOW_MS);
    // A lowered limit: shrink only once the times in the window fit in it.
    if (log.times.length > capacity && log.count <= capacity) {
      log = log.resized(capacity);
      this.logs.set(bucket, log);
    }
    const allowed = limit > 0 && log.count < limit;
    if (allowed) {
      // The buffer grows with use (doubling, up to the limit): a key with a huge contract limit but
      // little traffic costs little memory.
      if (log.count === log.times.length) {
        log = log.resized(Math.min(capacity, log.times.length * 2));
        this.logs.set(bucket, log);
      }
      log.push(nowMs);
    }
    return decide(allowed, limit, log.count, log.freeing(limit, nowMs), nowMs);
  }

  used(bucket: string, nowMs: number): Promise<number> {
    const log = this.logs.get(bucket);
    if (!log) return Promise.resolve(0);
    log.evictBefore(nowMs - WINDOW_MS);
    return Promise.resolve(log.count);
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
