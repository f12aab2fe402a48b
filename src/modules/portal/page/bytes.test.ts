import { describe, expect, it } from 'vitest';
import { formatBytes } from './bytes.js';

describe('file sizes for people', () => {
  it('uses decimal units and words for whole bytes, in the locale', () => {
    expect(formatBytes('en', 193)).toBe('193 bytes');
    expect(formatBytes('en', 1)).toBe('1 byte');
    expect(formatBytes('en', 5_000_000)).toBe('5 MB');
    expect(formatBytes('en', 1_500_000)).toBe('1.5 MB');
    expect(formatBytes('en', 24_500)).toBe('25 kB');
    expect(formatBytes('en', 5 * 1024 ** 3)).toBe('5.4 GB');
    expect(formatBytes('de', 193)).toBe('193 Byte');
    expect(formatBytes('de', 1_500_000)).toBe('1,5 MB');
    expect(formatBytes('fr', 193)).toBe('193\u00a0octets');
    expect(formatBytes('nl', 999)).toBe('999 byte');
    expect(formatBytes('es', 2_000_000_000)).toBe('2 GB');
  });
});
