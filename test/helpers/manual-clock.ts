import type { Clock } from '../../src/lib/clock.js';

/** A clock the test moves by hand (lease expiry, backoff). */
export class ManualClock implements Clock {
  constructor(public ms: number) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
