import { describe, expect, it } from 'vitest';
import { clientCountry, examplePhone, phoneInE164 } from './phone.js';

describe('clientCountry', () => {
  const client = (country: string | null, timezone: string | null, language: string | null) =>
    clientCountry({ country, timezone, language });

  it('takes the country the caller named first, then the time zone, then the language region', () => {
    expect(client('de', 'America/New_York', 'en-US')).toBe('DE');
    expect(client(null, 'Europe/Berlin', 'en-US')).toBe('DE');
    expect(client(null, null, 'de-AT')).toBe('AT');
    expect(client(null, 'Etc/UTC', 'fr-CA')).toBe('CA');
  });

  it('is unknown without a country, a known zone or a language with a region', () => {
    expect(client(null, null, 'de')).toBeUndefined();
    expect(client(null, 'Etc/UTC', 'en')).toBeUndefined();
    expect(client('XX', null, null)).toBeUndefined();
  });
});

describe('phoneInE164', () => {
  it('reads numbers as people type them, in the client country', () => {
    expect(phoneInE164('030 1234567', 'DE')).toBe('+49301234567');
    expect(phoneInE164('(415) 555-2671', 'US')).toBe('+14155552671');
    expect(phoneInE164('+44 20 7946 0958', 'DE')).toBe('+442079460958');
  });

  it('refuses what is no number of that country', () => {
    expect(phoneInE164('030 1234567', undefined)).toBeUndefined();
    expect(phoneInE164('123', 'DE')).toBeUndefined();
    expect(phoneInE164('not a phone', 'DE')).toBeUndefined();
  });
});

describe('examplePhone', () => {
  it('writes a number as people of that country do', () => {
    expect(examplePhone('DE')).toBe('01512 3456789');
    expect(examplePhone(undefined)).toBeUndefined();
  });
});
