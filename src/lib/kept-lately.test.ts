import { describe, expect, it } from 'vitest';
import { KeptLately } from './kept-lately.js';

describe('values kept lately', () => {
  it('makes a value once per key, and anew once forgotten', () => {
    const made: string[] = [];
    const kept = new KeptLately((key) => {
      made.push(key);
      return { key };
    }, 10);
    const first = kept.get('a');
    expect(kept.get('a')).toBe(first);
    kept.get('b');
    kept.forget('a');
    expect(kept.get('a')).not.toBe(first);
    expect(kept.get('b')).toEqual({ key: 'b' });
    kept.forget();
    kept.get('b');
    expect(made).toEqual(['a', 'b', 'a', 'b']);
  });

  it('drops every value when full, and never keeps a key over the length', () => {
    const kept = new KeptLately((key) => ({ key }), 3, 5);
    const a = kept.get('a');
    kept.get('b');
    kept.get('c');
    expect(kept.get('a')).toBe(a);
    kept.get('d');
    expect(kept.get('a')).not.toBe(a);
    expect(kept.get('longer')).not.toBe(kept.get('longer'));
  });

  it('keeps a null value as any other', () => {
    let calls = 0;
    const kept = new KeptLately(() => {
      calls++;
      return null;
    }, 10);
    expect([kept.get('x'), kept.get('x')]).toEqual([null, null]);
    expect(calls).toBe(1);
  });
});
