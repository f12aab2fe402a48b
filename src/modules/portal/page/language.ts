import { SUPPORTED_LANGUAGES } from '../../../i18n/index.js';

/**
 * The portal page's language: the one the client picked on the page (`?lang=`, then kept for the
 * visit in a session cookie), else the browser's preference (Accept-Language), else the language the
 * sender gave for the client. Only languages with a catalogue count; anything else falls through.
 */
export const LANGUAGE_COOKIE = 'portal_lang';

export interface LanguageChoice {
  /** `?lang=` of this request. */
  query?: string | undefined;
  /** The portal_lang cookie: an earlier `?lang=` of this visit. */
  cookie?: string | undefined;
  /** The Accept-Language header. */
  acceptLanguage?: string | undefined;
}

/** "de-AT" → "de" when German has a catalogue; undefined otherwise. */
export function catalogueLanguage(tag: string | null | undefined): string | undefined {
  const base = (tag ?? '').trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return SUPPORTED_LANGUAGES.includes(base) ? base : undefined;
}

/** The supported languages of an Accept-Language header, most preferred first (q=0 and `*` skipped). */
export function acceptedLanguages(header: string | undefined): string[] {
  if (!header) return [];
  const ranked = header
    .split(',')
    .slice(0, 32)
    .map((part, index) => {
      const [tag = '', ...params] = part.split(';').map((s) => s.trim());
      const q = params.find((p) => /^q=/i.test(p));
      const weight = q ? Number(q.slice(2)) : 1;
      return { tag, weight: Number.isFinite(weight) ? weight : 0, index };
    })
    .filter((r) => r.tag !== '*' && r.weight > 0)
    .sort((a, b) => b.weight - a.weight || a.index - b.index);
  const out: string[] = [];
  for (const { tag } of ranked) {
    const language = catalogueLanguage(tag);
    if (language && !out.includes(language)) out.push(language);
  }
  return out;
}

export function pageLanguage(choice: LanguageChoice, clientLanguage: string | null | undefined): string {
  return (
    catalogueLanguage(choice.query) ??
    catalogueLanguage(choice.cookie) ??
    acceptedLanguages(choice.acceptLanguage)[0] ??
    catalogueLanguage(clientLanguage) ??
    'en'
  );
}

/** The cookie header's portal_lang value, if any. */
export function languageCookie(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [name, value] = part.split('=').map((s) => s.trim());
    if (name === LANGUAGE_COOKIE) return value;
  }
  return undefined;
}

/** What a request says about its reader's language: ?lang=, the visit's cookie, Accept-Language. */
export function languageChoice(request: {
  query: unknown;
  headers: { cookie?: string | undefined; 'accept-language'?: string | undefined };
}): LanguageChoice {
  const query = request.query as { lang?: unknown } | undefined;
  return {
    query: typeof query?.lang === 'string' ? query.lang : undefined,
    cookie: languageCookie(request.headers.cookie),
    acceptLanguage: request.headers['accept-language'],
  };
}

/** The language's own name, as a speaker writes it at the start of a line ("Deutsch", "Français"). */
export function languageName(language: string): string {
  const name = new Intl.DisplayNames([language], { type: 'language' }).of(language) ?? language;
  return name.charAt(0).toLocaleUpperCase(language) + name.slice(1);
}
