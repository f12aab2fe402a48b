import { describe, expect, it } from 'vitest';
import { acceptedLanguages, languageCookie, languageName, pageLanguage } from './language.js';

describe('the portal page language', () => {
  it('reads Accept-Language by weight, keeping only languages with a catalogue', () => {
    expect(acceptedLanguages('fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5')).toEqual(['fr', 'en', 'de']);
    expect(acceptedLanguages('ja,nl;q=0.2,es;q=0.4')).toEqual(['es', 'nl']);
    expect(acceptedLanguages('de;q=0, en-GB')).toEqual(['en']);
    expect(acceptedLanguages('*')).toEqual([]);
    expect(acceptedLanguages(undefined)).toEqual([]);
    expect(acceptedLanguages('de;q=abc')).toEqual([]);
  });

  it('prefers ?lang=, then the visit cookie, then the browser, then the sender’s choice', () => {
    const all = { query: 'nl', cookie: 'es', acceptLanguage: 'fr' };
    expect(pageLanguage(all, 'de')).toBe('nl');
    expect(pageLanguage({ ...all, query: 'xx' }, 'de')).toBe('es');
    expect(pageLanguage({ ...all, query: undefined, cookie: undefined }, 'de')).toBe('fr');
    expect(pageLanguage({ acceptLanguage: '*' }, 'de-AT')).toBe('de');
    expect(pageLanguage({ acceptLanguage: 'ja' }, 'ja')).toBe('en');
  });

  it('finds the cookie among others and names languages in their own words', () => {
    expect(languageCookie('a=1; portal_lang=de; b=2')).toBe('de');
    expect(languageCookie(undefined)).toBeUndefined();
    expect(['en', 'de', 'es', 'fr', 'nl'].map(languageName)).toEqual([
      'English',
      'Deutsch',
      'Español',
      'Français',
      'Nederlands',
    ]);
  });
});
