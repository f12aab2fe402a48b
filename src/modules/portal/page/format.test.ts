import { describe, expect, it } from 'vitest';
import { formatDate, formatNumber, formatPhone } from './format.js';

describe('values as people write them', () => {
  it('writes a phone number nationally in the client’s country, internationally elsewhere', () => {
    expect(formatPhone('+49301234567', 'DE')).toBe('030 1234567');
    expect(formatPhone('+49301234567', 'de')).toBe('030 1234567');
    expect(formatPhone('+442079460958', 'DE')).toBe('+44 20 7946 0958');
    expect(formatPhone('+49301234567', undefined)).toBe('+49 30 1234567');
    expect(formatPhone('not a number', 'DE')).toBe('not a number');
  });

  it('groups digits from five on (a year stays a year) and writes dates in words', () => {
    expect(formatNumber('en', 1921)).toBe('1921');
    expect(formatNumber('en', 12345)).toBe('12,345');
    expect(formatNumber('de', 1234567.5)).toBe('1.234.567,5');
    expect(formatDate('en', '2027-02-01')).toBe('February 1, 2027');
    expect(formatDate('fr', '2027-02-01')).toBe('1 février 2027');
  });
});
