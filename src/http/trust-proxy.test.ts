import { describe, expect, it } from 'vitest';
import { parseTrustProxy } from './trust-proxy.js';

describe('parseTrustProxy', () => {
  it('is off unless set', () => {
    for (const value of [undefined, '', ' ', 'off', 'false', '0']) expect(parseTrustProxy(value)).toBe(false);
  });

  it('takes a hop count, or a list of addresses, CIDR ranges and named ranges', () => {
    expect(parseTrustProxy('1')).toBe(1);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.5')).toEqual(['10.0.0.5']);
    expect(parseTrustProxy(' 10.0.0.0/8, fd00::/8 ,loopback,::1')).toEqual([
      '10.0.0.0/8',
      'fd00::/8',
      'loopback',
      '::1',
    ]);
  });

  it('refuses trusting everyone, and anything that is not an address or a range', () => {
    for (const value of [
      'true',
      '*',
      'all',
      '11',
      'proxy.example',
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0.0/8/1',
      '10.0.0.0/x',
      '300.1.1.1',
      '-1',
    ]) {
      expect(() => parseTrustProxy(value), value).toThrow();
    }
  });
});
