import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SUPPORTED_LANGUAGES, supportedLanguage, translator } from './index.js';

const LOCALES = join(dirname(fileURLToPath(import.meta.url)), 'locales');

function keysOf(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null) return [prefix];
  return Object.entries(value).flatMap(([k, v]) => keysOf(v, prefix ? `${prefix}.${k}` : k));
}

describe('i18n', () => {
  it('maps language tags to supported languages', () => {
    expect(SUPPORTED_LANGUAGES).toEqual(['de', 'en', 'es', 'fr', 'nl']);
    expect(supportedLanguage('fr-CA')).toBe('fr');
    expect(supportedLanguage('DE')).toBe('de');
    expect(supportedLanguage('ja')).toBe('en');
    expect(supportedLanguage(undefined)).toBe('en');
  });

  it('translates per language', () => {
    expect(translator('fr-CA', 'common')('language_name')).toBe('Français');
    expect(translator('ja', 'common')('language_name')).toBe('English');
  });

  it('gives every language the same keys in every namespace as English', async () => {
    const { readFile } = await import('node:fs/promises');
    for (const file of readdirSync(join(LOCALES, 'en'))) {
      const english = keysOf(JSON.parse(await readFile(join(LOCALES, 'en', file), 'utf8'))).sort();
      for (const language of SUPPORTED_LANGUAGES) {
        const other = keysOf(JSON.parse(await readFile(join(LOCALES, language, file), 'utf8'))).sort();
        expect(other, `${language}/${file}`).toEqual(english);
      }
    }
  });

  it('answers a string it keeps exactly as i18next does, and still interpolates', async () => {
    const { readFile } = await import('node:fs/promises');
    let compared = 0;
    for (const file of readdirSync(join(LOCALES, 'en'))) {
      const namespace = file.slice(0, -'.json'.length);
      const keys = keysOf(JSON.parse(await readFile(join(LOCALES, 'en', file), 'utf8')));
      for (const language of SUPPORTED_LANGUAGES) {
        const t = translator(language, namespace);
        expect(translator(language, namespace)).toBe(t);
        for (const key of keys) {
          // With options (even none) the call goes to i18next; without, the first answer is kept.
          const direct = t(key, {});
          expect(t(key), `${language}/${namespace}:${key}`).toBe(direct);
          expect(t(key)).toBe(direct);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(1_000);
    const t = translator('fr', 'email');
    expect(t('greeting', { name: 'Ana' })).toContain('Ana');
    expect(t('greeting', { name: 'Luc' })).toContain('Luc');
    // A key no catalogue has answers itself, kept or not.
    expect(t('no.such.key')).toBe('no.such.key');
  });
});
