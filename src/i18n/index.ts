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
 * dozens of them. A string with plain `{{name}}` placeholders, asked for with their values, is filled
 * in from its kept template (keepingStrings); anything else goes to i18next.
 */
export function translator(language: string | null | undefined, namespace: string): TFunction {
  const lng = supportedLanguage(language);
  const id = `${lng}/${namespace}`;
  let found = translators.get(id);
  if (!found) {
    found = keepingStrings(instance.getFixedT(lng, namespace));
    translators.set(id, found);
  }
  return found;
}

/**
 * Options that i18next reads itself (plurals, context, defaults, lookup and interpolation settings): a
 * call with any of them goes to i18next.
 */
const I18NEXT_OPTIONS = new Set([
  'count',
  'context',
  'ordinal',
  'defaultValue',
  'lng',
  'lngs',
  'ns',
  'fallbackLng',
  'returnObjects',
  'returnDetails',
  'joinArrays',
  'postProcess',
  'interpolation',
  'skipInterpolation',
  'replace',
  'keyPrefix',
  'keySeparator',
  'nsSeparator',
  'appendNamespaceToMissingKey',
]);

/** A catalogue string cut at its `{{name}}` placeholders: texts[0], values[0], texts[1], … */
interface Template {
  texts: string[];
  names: string[];
}

const PLACEHOLDER = /\{\{([A-Za-z0-9_]+)\}\}/g;

/**
 * The template of a string i18next answered with interpolation skipped, or undefined when the string
 * has anything beyond plain `{{name}}` placeholders (formats, nesting, unescaped values): those always
 * go to i18next.
 */
function templateOf(raw: string): Template | undefined {
  const texts: string[] = [];
  const names: string[] = [];
  let from = 0;
  for (const match of raw.matchAll(PLACEHOLDER)) {
    texts.push(raw.slice(from, match.index));
    names.push(match[1] ?? '');
    from = match.index + match[0].length;
  }
  texts.push(raw.slice(from));
  if (texts.some((text) => text.includes('{{') || text.includes('$t('))) return undefined;
  return { texts, names };
}

/**
 * The string filled in with `values`, as i18next fills it (a number or boolean as its text, no value
 * interpolated again), or undefined when a value is missing or of another kind (i18next decides).
 */
function fill(template: Template, values: Record<string, unknown>): string | undefined {
  let text = template.texts[0] ?? '';
  for (let index = 0; index < template.names.length; index++) {
    const value = values[template.names[index] ?? ''];
    if (typeof value === 'string') text += value;
    else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean')
      text += String(value);
    else return undefined;
    text += template.texts[index + 1] ?? '';
  }
  return text;
}

/** Plain option values only: no i18next option, nothing that is not a placeholder's value. */
function plainValues(options: unknown): options is Record<string, unknown> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return false;
  for (const key in options) {
    if (I18NEXT_OPTIONS.has(key) || key.startsWith('defaultValue')) return false;
  }
  return true;
}

function keepingStrings(t: TFunction): TFunction {
  const kept = new Map<string, string>();
  const templates = new Map<string, Template | null>();
  const general = t as unknown as (...args: unknown[]) => unknown;
  // i18next's TFunction is a branded type of overloads: the wrapper takes the same arguments.
  const translate = (key: unknown, ...rest: unknown[]): unknown => {
    if (typeof key !== 'string') return general(key, ...rest);
    if (rest.length === 0) {
      let text = kept.get(key);
      if (text === undefined) {
        text = t(key);
        if (kept.size < MAX_KEPT_STRINGS) kept.set(key, text);
      }
      return text;
    }
    const [options] = rest;
    if (rest.length > 1 || !plainValues(options)) return general(key, ...rest);
    let template = templates.get(key);
    if (template === undefined) {
      template = templateOf(t(key, { skipInterpolation: true })) ?? null;
      if (templates.size < MAX_KEPT_STRINGS) templates.set(key, template);
    }
    return (template && fill(template, options)) ?? general(key, ...rest);
  };
  return translate as unknown as TFunction;
}
