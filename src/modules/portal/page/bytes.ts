/**
 * File sizes as people read them, in the reader's locale: decimal units as on disks and in file
 * managers (5,000,000 bytes is "5 MB", not "4.8 MB"), and whole bytes in words ("193 bytes").
 * Pure (Intl only): the page script bundles the same function.
 */
const UNITS = [
  ['kilobyte', 1e3],
  ['megabyte', 1e6],
  ['gigabyte', 1e9],
  ['terabyte', 1e12],
] as const;

export function formatBytes(locale: string, bytes: number): string {
  if (bytes < 1000) {
    return new Intl.NumberFormat(locale, { style: 'unit', unit: 'byte', unitDisplay: 'long' }).format(bytes);
  }
  let chosen: (typeof UNITS)[number] = UNITS[0];
  for (const unit of UNITS) if (bytes >= unit[1]) chosen = unit;
  const amount = bytes / chosen[1];
  return new Intl.NumberFormat(locale, {
    style: 'unit',
    unit: chosen[0],
    unitDisplay: 'short',
    maximumFractionDigits: amount < 10 ? 1 : 0,
  }).format(amount);
}
