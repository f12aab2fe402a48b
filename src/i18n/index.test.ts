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
});
