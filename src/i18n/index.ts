import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import i18next, { type TFunction } from 'i18next';

/**
 * Message catalogues for everything a client or account holder reads (portal, dashboard, emails, SMS).
 * One JSON file per language and namespace: locales/<language>/<namespace>.json. A namespace is owned by
 * one module (portal.json by the portal, email.json by notifications…), so modules never edit each other's.
 */
const LOCALES_DIR = join(dirname(fileURLToPath(import.meta.url)), 'locales');
export const FALLBACK_LANGUAGE = 'en';

function loadResources(): Record<string, Record<string, Record<string, unknown>>> {
  const resources: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const language of readdirSync(LOCALES_DIR)) {
    resources[language] = {};
    for (const file of readdirSync(join(LOCALES_DIR, language))) {
      if (!file.endsWith('.json')) continue;
      const namespace = file.slice(0, -'.json'.length);
      resources[language][namespace] = JSON.parse(
        readFileSync(join(LOCALES_DIR, language, file), 'utf8'),
      ) as Record<string, unknown>;
    }
  }
  return resources;
}

const resources = loadResources();
export const SUPPORTED_LANGUAGES = Object.keys(resources).sort();

const instance = i18next.createInstance();
await instance.init({
  resources,
  fallbackLng: FALLBACK_LANGUAGE,
  supportedLngs: SUPPORTED_LANGUAGES,
  nonExplicitSupportedLngs: true,
  load: 'languageOnly',
  interpolation: { escapeValue: false },
  returnNull: false,
  initAsync: false,
});

/** The best supported language for a BCP 47 tag ("fr-CA" → "fr"; unknown → "en"). */
export function supportedLanguage(tag: string | null | undefined): string {
  const base = (tag ?? '').toLowerCase().split('-')[0] ?? '';
  return SUPPORTED_LANGUAGES.includes(base) ? base : FALLBACK_LANGUAGE;
}

/** A translator for one language and namespace. Values are not HTML-escaped: escape at rendering. */
export function translator(language: string | null | undefined, namespace: string): TFunction {
  return instance.getFixedT(supportedLanguage(language), namespace);
}
