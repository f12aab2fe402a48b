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

/** Translators made so far, by language and namespace (a handful: languages × namespaces). */
const translators = new Map<string, TFunction>();

/** Strings kept per translator, asked for without options: catalogue keys, so a bounded few hundred. */
const MAX_KEPT_STRINGS = 2_000;

/**
 * A translator for one language and namespace. Values are not HTML-escaped: escape at rendering.
 * A string asked for without options (no interpolation, no plural) is looked up by i18next once and
 * then kept: the catalogues do not change while the process runs, and an email or a page asks for
 * dozens of them.
 */
export function translator(language: string | null | undefined, namespace: string): TFunction {
  const lng = supportedLanguage(language);
  const id = `${lng}/${namespace}`;
  let found = translators.get(id);
  if (!found) {
    found = keepingPlainStrings(instance.getFixedT(lng, namespace));
    translators.set(id, found);
  }
  return found;
}

function keepingPlainStrings(t: TFunction): TFunction {
  const kept = new Map<string, string>();
  const general = t as unknown as (...args: unknown[]) => unknown;
  // i18next's TFunction is a branded type of overloads: the wrapper takes the same arguments.
  const translate = (key: unknown, ...rest: unknown[]): unknown => {
    if (rest.length > 0 || typeof key !== 'string') return general(key, ...rest);
    let text = kept.get(key);
    if (text === undefined) {
      text = t(key);
      if (kept.size < MAX_KEPT_STRINGS) kept.set(key, text);
    }
    return text;
  };
  return translate as unknown as TFunction;
}
