/** Dates, numbers, sizes and lists for the page's locale (Intl: no catalogue strings needed). */

export function formatNumber(locale: string, value: number): string {
  return new Intl.NumberFormat(locale).format(value);
}

const UNITS = [
  ['byte', 1],
  ['kilobyte', 1024],
  ['megabyte', 1024 ** 2],
  ['gigabyte', 1024 ** 3],
] as const;

export function formatBytes(locale: string, bytes: number): string {
  let chosen: (typeof UNITS)[number] = UNITS[0];
  for (const unit of UNITS) if (bytes >= unit[1]) chosen = unit;
  const amount = bytes / chosen[1];
  return new Intl.NumberFormat(locale, {
    style: 'unit',
    unit: chosen[0],
    unitDisplay: 'short',
    maximumFractionDigits: amount < 10 && chosen[1] > 1 ? 1 : 0,
  }).format(amount);
}

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
