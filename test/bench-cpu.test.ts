import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cpuMeter } from '../bench/cpu.js';

/**
 * The benchmarks' CPU meter (bench:workers, bench:scale) against Node's own account of this process's
 * CPU time (process.cpuUsage), over a stretch of pure computation.
 */
describe.runIf(existsSync('/proc/self/task'))('bench/cpu: cpuMeter', () => {
  it("reads a process's CPU time as process.cpuUsage does, and counts its wake-ups", async () => {
    const since = await cpuMeter([process.pid]);
    const start = process.cpuUsage();
    let x = 0;
    for (let i = 0; i < 30_000_000; i++) x = (x * 31 + i) % 1_000_003;
    await new Promise((resolve) => setTimeout(resolve, 50)); // one sleep at least: a wake-up
    const used = process.cpuUsage(start);
    const figures = await since(1000, 1);
    const expected = (used.user + used.system) / 1e6;
    expect(x).toBeGreaterThanOrEqual(0);
    expect(expected).toBeGreaterThan(0.02);
    // secondsPer1000 over 1,000 units is the seconds themselves; the meter counts every thread (V8's
    // helpers too) and its own reads of /proc, so it may read a little more, never much less.
    expect(figures.secondsPer1000).toBeGreaterThan(expected * 0.9);
    expect(figures.secondsPer1000).toBeLessThan(expected * 1.5 + 0.05);
    expect(figures.switchesPerUnit).toBeGreaterThan(0);
  });
});
