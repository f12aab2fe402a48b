import { parsePhoneNumberFromString } from 'libphonenumber-js';

/** Dates, numbers, sizes and lists for the page's locale (Intl: no catalogue strings needed). */

/** Grouping from five digits on, as style guides ask: 1921 (a year, a postcode) stays 1921; 12,345. */
export function formatNumber(locale: string, value: number): string {
  return new Intl.NumberFormat(locale, { useGrouping: 'min2' }).format(value);
}

export { formatBytes } from './bytes.js';

/** A calendar date (YYYY-MM-DD) in words, e.g. "15 December 2026"; the date does not move with time zones. */
export function formatDate(locale: string, ymd: string): string {
  const time = Date.parse(`${ymd}T00:00:00Z`);
  if (Number.isNaN(time)) return ymd;
  return new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(time));
}

/** A moment in the client's time zone when known, else in UTC (and then labelled so). */
export function formatDateTime(locale: string, iso: string, timeZone: string | null): string {
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return iso;
  const options = { dateStyle: 'medium', timeStyle: 'short' } as const;
  if (timeZone) {
    try {
      return new Intl.DateTimeFormat(locale, { ...options, timeZone }).format(new Date(time));
    } catch {
      // An unknown zone name: fall through to UTC.
    }
  }
  return `${new Intl.DateTimeFormat(locale, { ...options, timeZone: 'UTC' }).format(new Date(time))} UTC`;
}

export function formatList(
  locale: string,
  items: readonly string[],
  type: 'conjunction' | 'disjunction',
): string {
  return new Intl.ListFormat(locale, { style: 'long', type }).format(items);
}

/**
 * A stored phone number (E.164) as its owner writes it: in national form for a number of the
 * client's own country ("030 1234567"), in international form otherwise ("+44 20 7946 0958").
 */
export function formatPhone(e164: string, country: string | undefined): string {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed?.isValid()) return e164;
  return country && parsed.country === country.toUpperCase()
    ? parsed.formatNational()
    : parsed.formatInternational();
}
