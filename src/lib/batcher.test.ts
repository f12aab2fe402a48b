import { describe, expect, it } from 'vitest';
import { Batcher, type BatchOutcome } from './batcher.js';

/** A batcher that doubles numbers, refuses negative ones alone, and records each write's inputs. */
function recordingBatcher(max = 64) {
  const writes: number[][] = [];
  let release: (() => void) | undefined;
  let held: Promise<void> | undefined;
  const batcher = new Batcher<number, number>(async (inputs) => {
    writes.push(inputs);
    if (held) await held;
    if (inputs.includes(999)) throw new Error('the write failed');
    return inputs.map((n): BatchOutcome<number> =>
      n < 0 ? { ok: false, error: new Error(`refused ${n}`) } : { ok: true, value: 2 * n },
    );
  }, max);
  return {
    batcher,
    writes,
    /** Holds the next writes until released. */
    hold: () => {
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release?.();
      };
    },
  };
}

describe('Batcher', () => {
  it('writes the inputs handed in during one turn with one call, each caller getting its own value', async () => {
    const { batcher, writes } = recordingBatcher();
    expect(await Promise.all([batcher.run(1), batcher.run(2), batcher.run(3)])).toEqual([2, 4, 6]);
    expect(writes).toEqual([[1, 2, 3]]);
  });

  it('an input handed in after an await in the same pass joins the batch', async () => {
    const { batcher, writes } = recordingBatcher();
    const first = batcher.run(1);
    await Promise.resolve();
    const second = batcher.run(2);
    expect(await Promise.all([first, second])).toEqual([2, 4]);
    expect(writes).toEqual([[1, 2]]);
  });

  it('gathers what is handed in while a write runs into the next write', async () => {
    const { batcher, writes, hold } = recordingBatcher();
    const release = hold();
    const first = batcher.run(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[1]]);
    const later = [batcher.run(2), batcher.run(3)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[1]]);
    release();
    expect(await Promise.all([first, ...later])).toEqual([2, 4, 6]);
    expect(writes).toEqual([[1], [2, 3]]);
  });

  it('writes at most max inputs at once', async () => {
    const { batcher, writes } = recordingBatcher(2);
    expect(await Promise.all([1, 2, 3, 4, 5].map((n) => batcher.run(n)))).toEqual([2, 4, 6, 8, 10]);
    expect(writes).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('rejects an input alone when its outcome is an error', async () => {
    const { batcher } = recordingBatcher();
    const results = await Promise.allSettled([batcher.run(1), batcher.run(-1), batcher.run(3)]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      2,
      'refused -1',
      6,
    ]);
  });

  it('rejects every input of a write that throws, and writes the next batch as usual', async () => {
    const { batcher, writes } = recordingBatcher(2);
    const results = await Promise.allSettled([batcher.run(1), batcher.run(999), batcher.run(3)]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'the write failed',
      'the write failed',
      6,
    ]);
    expect(writes).toEqual([[1, 999], [3]]);
    expect(await batcher.run(4)).toBe(8);
  });

  it('rejects an input the batch gave no outcome for', async () => {
    const batcher = new Batcher<number, number>(() => Promise.resolve([{ ok: true, value: 1 }]), 8);
    const results = await Promise.allSettled([batcher.run(1), batcher.run(2)]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: 1 });
    expect(results[1]?.status).toBe('rejected');
  });

  describe('gathering', () => {
    const turn = () => new Promise((resolve) => setImmediate(resolve));

    /** A batcher that records its writes, waiting up to `ms` for inputs while `expecting.more` is set. */
    function gatheringBatcher(ms: number, max = 64) {
      const writes: number[][] = [];
      const expecting = { more: true };
      const batcher = new Batcher<number, number>(
        (inputs) => {
          writes.push(inputs);
          return Promise.resolve(inputs.map((n) => ({ ok: true, value: 2 * n }) as const));
        },
        max,
        { expecting: () => expecting.more, ms },
      );
      return { batcher, writes, expecting };
    }

    it('waits for inputs handed in over later turns while more are expected, and ends when none are', async () => {
      // A wait of a minute: only the last input (nothing more expected) can end it within the test's time.
      const { batcher, writes, expecting } = gatheringBatcher(60_000);
      const results = [batcher.run(1)];
      await turn();
      results.push(batcher.run(2));
      await turn();
      await turn();
      expect(writes).toEqual([]);
      expecting.more = false;
      results.push(batcher.run(3));
      expect(await Promise.all(results)).toEqual([2, 4, 6]);
      expect(writes).toEqual([[1, 2, 3]]);
    });

    it('ends the wait once the batch is full', async () => {
      const { batcher, writes } = gatheringBatcher(60_000, 3);
      const results = [batcher.run(1)];
      await turn();
      results.push(batcher.run(2));
      await turn();
      results.push(batcher.run(3));
      expect(await Promise.all(results)).toEqual([2, 4, 6]);
      expect(writes).toEqual([[1, 2, 3]]);
    });

    it('waits at most its time for inputs that do not come', async () => {
      const { batcher, writes } = gatheringBatcher(5);
      expect(await batcher.run(1)).toBe(2);
      expect(writes).toEqual([[1]]);
    });

    it('does not wait when nothing more is expected', async () => {
      const { batcher, writes, expecting } = gatheringBatcher(60_000);
      expecting.more = false;
      expect(await Promise.all([batcher.run(1), batcher.run(2)])).toEqual([2, 4]);
      await turn();
      expect(await batcher.run(3)).toBe(6);
      expect(writes).toEqual([[1, 2], [3]]);
    });
  });
});
