import { describe, expect, it } from 'vitest';
import { newId, randomBase62, randomHex } from './ids.js';

describe('ids', () => {
  it('are the prefix and 22 base62 characters, never twice across many refills of the byte pool', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('job'));
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^job_[0-9A-Za-z]{22}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws every base62 character equally often (no modulo bias)', () => {
    const counts = new Map<string, number>();
    const text = randomBase62(248_000);
    expect(text).toHaveLength(248_000);
    for (const character of text) counts.set(character, (counts.get(character) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // Pearson's chi-squared over 61 degrees of freedom: about 61 when uniform, above 150 with a
    // chance far below one in a billion. Taking bytes modulo 62 without rejecting 248–255 gives
    // eight characters a quarter more draws: several thousand here.
    const expected = text.length / 62;
    let chiSquared = 0;
    for (const n of counts.values()) chiSquared += (n - expected) ** 2 / expected;
    expect(chiSquared).toBeLessThan(150);
  });

  it('draws hex of the bytes asked for, never twice across refills, with each hex digit about equally often', () => {
    // 16 bytes divide the 4 KB pool; 24 do not, so some draws skip the pool's last bytes.
    for (const bytes of [16, 24]) {
      const drawn = Array.from({ length: 20_000 }, () => randomHex(bytes));
      for (const hex of drawn) expect(hex).toMatch(new RegExp(`^[0-9a-f]{${bytes * 2}}$`));
      expect(new Set(drawn).size).toBe(drawn.length);
      const counts = new Map<string, number>();
      for (const hex of drawn) for (const digit of hex) counts.set(digit, (counts.get(digit) ?? 0) + 1);
      expect(counts.size).toBe(16);
      // Chi-squared over 15 degrees of freedom: about 15 when uniform; 60 is far out of reach by chance.
      const expected = (drawn.length * bytes * 2) / 16;
      let chiSquared = 0;
      for (const n of counts.values()) chiSquared += (n - expected) ** 2 / expected;
      expect(chiSquared).toBeLessThan(60);
    }
  });

  it('refuses a size the pool cannot give at once', () => {
    for (const bytes of [0, -1, 1.5, 4097]) expect(() => randomHex(bytes)).toThrow(RangeError);
  });
});
