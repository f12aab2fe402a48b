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

  it('fills in plain placeholders exactly as i18next does, for every string of every catalogue', async () => {
    const { readFile } = await import('node:fs/promises');
    let filled = 0;
    for (const file of readdirSync(join(LOCALES, 'en'))) {
      const namespace = file.slice(0, -'.json'.length);
      for (const language of SUPPORTED_LANGUAGES) {
        const catalogue: unknown = JSON.parse(await readFile(join(LOCALES, language, file), 'utf8'));
        const t = translator(language, namespace);
        for (const path of keysOf(catalogue)) {
          const raw = path
            .split('.')
            .reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], catalogue);
          const names = [...String(raw).matchAll(/\{\{([A-Za-z0-9_]+)\}\}/g)].map((m) => m[1] ?? '');
          // A plural form is asked for by its base key with a count (which always goes to i18next).
          const key = path.replace(/_(zero|one|two|few|many|other)$/, '');
          // Strings, a number, a value that looks like a placeholder (never filled in again) and one
          // value no placeholder takes; then with one value missing (i18next decides).
          const values: Record<string, unknown> = { unused: 'nobody {{reads}} this' };
          names.forEach((name, index) => (values[name] = index === 1 ? 42.5 : `<${name} $& {{${name}}}>`));
          // With an option of i18next's own (`interpolation`, changing nothing) the call goes to i18next.
          const byI18next = (options: object) => t(key, { ...options, interpolation: {} });
          expect(t(key, values), `${language}/${namespace}:${path}`).toBe(byI18next(values));
          const [first] = names;
          if (first !== undefined) {
            const { [first]: _missing, ...fewer } = values;
            expect(t(key, fewer), `${language}/${namespace}:${path} without ${first}`).toBe(byI18next(fewer));
          }
          filled++;
        }
      }
    }
    expect(filled).toBeGreaterThan(1_000);
    const t = translator('en', 'email');
    // With a count (a plural) or another i18next option the call goes to i18next, as before.
    expect(t('greeting', { name: 'Ana', count: 2 })).toContain('Ana');
    expect(t('greeting', { name: 'Ana', lng: 'fr' })).toContain('Ana');
  });
});
