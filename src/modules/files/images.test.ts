import { describe, expect, it } from 'vitest';
import { assertPixelBudget, configureImageWork, withImageSlot } from './images.js';

describe('image work', () => {
  it('runs at most IMAGE_CONCURRENCY decodings at once, the rest in order', async () => {
    configureImageWork(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const releases: Array<() => void> = [];
    const jobs = [0, 1, 2, 3].map((n) =>
      withImageSlot(async () => {
        running++;
        peak = Math.max(peak, running);
        order.push(n);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
      }),
    );
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    await tick();
    expect(order).toEqual([0, 1]);
    releases.shift()?.();
    await tick();
    await tick();
    expect(order).toEqual([0, 1, 2]);
    while (releases.length > 0) {
      releases.shift()?.();
      await tick();
      await tick();
    }
    await Promise.all(jobs);
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('refuses images over the pixel budget by their declared size', () => {
    expect(() => assertPixelBudget(10_001, 10_000, { maxPixels: 100_000_000 })).toThrow('10001×10000');
    expect(() => assertPixelBudget(10_000, 10_000, { maxPixels: 100_000_000 })).not.toThrow();
    expect(() => assertPixelBudget(undefined, 5, { maxPixels: 1 })).not.toThrow();
  });
});
