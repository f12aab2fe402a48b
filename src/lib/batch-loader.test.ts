import { describe, expect, it } from 'vitest';
import { BatchLoader } from './batch-loader.js';

function recordingLoader(max?: number) {
  const calls: string[][] = [];
  const loader = new BatchLoader<string>((keys) => {
    calls.push(keys);
    if (keys.includes('boom')) return Promise.reject(new Error('the read failed'));
    return Promise.resolve(new Map(keys.filter((k) => k !== 'missing').map((k) => [k, `row ${k}`])));
  }, max);
  return { loader, calls };
}

describe('BatchLoader', () => {
  it('reads the keys asked for in one pass with one call, each caller getting its own row', async () => {
    const { loader, calls } = recordingLoader();
    const rows = await Promise.all([
      loader.load('a'),
      loader.load('b'),
      loader.load('a'),
      loader.load('missing'),
    ]);
    expect(rows).toEqual(['row a', 'row b', 'row a', undefined]);
    expect(calls).toEqual([['a', 'b', 'missing']]);
  });

  it('reads again in a later pass: nothing is kept', async () => {
    const { loader, calls } = recordingLoader();
    expect(await loader.load('a')).toBe('row a');
    expect(await loader.load('a')).toBe('row a');
    expect(calls).toEqual([['a'], ['a']]);
  });

  it('splits a large pass into calls of at most `max` keys', async () => {
    const { loader, calls } = recordingLoader(2);
    const rows = await Promise.all(['a', 'b', 'c'].map((k) => loader.load(k)));
    expect(rows).toEqual(['row a', 'row b', 'row c']);
    expect(calls).toEqual([['a', 'b'], ['c']]);
  });

  it('rejects the look-ups of a failed call only', async () => {
    const { loader } = recordingLoader(2);
    const results = await Promise.allSettled(['boom', 'a', 'b'].map((k) => loader.load(k)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseRejectedResult).reason).toEqual(new Error('the read failed'));
  });
});
