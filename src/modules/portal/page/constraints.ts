import type { TFunction } from 'i18next';
import { canonicalFormat, FORMATS, type Format, type ItemDefinition } from '../../../domain/items.js';
import { acceptedFormats } from '../../../domain/values.js';
import { formatBytes, formatDate, formatList, formatNumber } from './format.js';

/** How a format is named to a client: its usual short name. */
const FORMAT_NAMES: Record<Format, string> = {
  png: 'PNG',
  jpg: 'JPG',
  svg: 'SVG',
  heic: 'HEIC',
  webp: 'WebP',
  gif: 'GIF',
  pdf: 'PDF',
  docx: 'Word (DOCX)',
  xlsx: 'Excel (XLSX)',
  pptx: 'PowerPoint (PPTX)',
  zip: 'ZIP',
  txt: 'TXT',
  csv: 'CSV',
  mp4: 'MP4',
  mov: 'MOV',
  mp3: 'MP3',
};

/** File name endings per format, for the file picker's accept list and the browser's pre-checks. */
const EXTENSIONS: Record<Format, string[]> = {
  png: ['.png'],
  jpg: ['.jpg', '.jpeg'],
  svg: ['.svg'],
  heic: ['.heic', '.heif'],
  webp: ['.webp'],
  gif: ['.gif'],
  pdf: ['.pdf'],
  docx: ['.docx'],
  xlsx: ['.xlsx'],
  pptx: ['.pptx'],
  zip: ['.zip'],
  txt: ['.txt'],
  csv: ['.csv'],
  mp4: ['.mp4', '.m4v'],
  mov: ['.mov'],
  mp3: ['.mp3'],
};

export type PageItemDef = Pick<ItemDefinition, 'type' | 'constraints' | 'required'>;

/** The formats an item takes, canonical (undefined: any file). */
export function formatsOf(def: PageItemDef): Format[] | undefined {
  return acceptedFormats({
    type: def.type,
    constraints: def.constraints,
    required: def.required,
    key: 'x',
    label: 'x',
    help: undefined,
    example: undefined,
    schema: undefined,
    options: undefined,
    assignee: undefined,
    proposed: undefined,
    section: undefined,
    show_if: undefined,
  });
}

/** The `accept` attribute of the file input: extensions and media types of the accepted formats. */
export function acceptAttribute(def: PageItemDef): string | undefined {
  const formats = formatsOf(def);
  if (!formats) return undefined;
  return [...formats.flatMap((f) => EXTENSIONS[f]), ...formats.flatMap((f) => FORMATS[f])].join(',');
}

/** What the browser checks before uploading (the server checks again, by content). */
export function clientRules(def: PageItemDef, maxBytes: number) {
  const c = def.constraints;
  const formats = formatsOf(def);
  return {
    formats: formats ?? null,
    extensions: formats ? formats.flatMap((f) => EXTENSIONS[f]) : null,
    mimes: formats ? formats.flatMap((f) => [...FORMATS[f]]) : null,
    max_bytes: maxBytes,
    min_width: c.min_width ?? null,
    min_height: c.min_height ?? null,
    transparent: c.transparent_background === true,
    max_count: c.max_count ?? (def.type === 'file_list' ? null : 1),
    // A one-file item: another file replaces the one it holds (the server does it in one step).
    replaces: def.type !== 'file_list' && (c.max_count ?? 1) === 1,
  };
}

function countRange(
  t: TFunction,
  locale: string,
  min: number | undefined,
  max: number | undefined,
  noun: string,
) {
  const n = (v: number) => formatNumber(locale, v);
  if (min !== undefined && max !== undefined) {
    return min === max
      ? t(`constraint.${noun}_exactly`, { count: min, n: n(min) })
      : t(`constraint.${noun}_between`, { min: n(min), max: n(max) });
  }
  if (min !== undefined) return t(`constraint.${noun}_at_least`, { count: min, n: n(min) });
  if (max !== undefined) return t(`constraint.${noun}_at_most`, { count: max, n: n(max) });
  return undefined;
}

/**
 * The item's constraints said in plain words in the page's language, e.g.
 * ["PNG or SVG", "at least 1000 px wide", "transparent background", "up to 10 MB"].
 */
export function describeConstraints(
  t: TFunction,
  locale: string,
  def: PageItemDef,
  maxBytes: number,
  /** The client's country: a phone number then needs no country code. */
  country?: string,
): string[] {
  const c = def.constraints;
  const n = (v: number) => formatNumber(locale, v);
  const out: (string | undefined)[] = [];
  const fileKind = def.type === 'image' || def.type === 'file' || def.type === 'file_list';
  if (fileKind) {
    const listed = c.formats?.map(canonicalFormat).filter((f): f is Format => f !== undefined);
    if (listed && listed.length > 0) {
      out.push(
        formatList(
          locale,
          listed.map((f) => FORMAT_NAMES[f]),
          'disjunction',
        ),
      );
    } else if (def.type === 'image') {
      out.push(t('constraint.any_image'));
    }
    if (c.min_width !== undefined) out.push(t('constraint.min_width', { n: n(c.min_width) }));
    if (c.min_height !== undefined) out.push(t('constraint.min_height', { n: n(c.min_height) }));
    if (c.transparent_background) out.push(t('constraint.transparent'));
    if (def.type === 'file_list') out.push(countRange(t, locale, c.min_count, c.max_count, 'files'));
    // The item's own size limit; the plan's (gigabytes) is no rule a client needs to read for a
    // logo, and an upload over it is refused with the limit named.
    if (c.max_bytes !== undefined && Number.isFinite(maxBytes))
      out.push(t('constraint.max_bytes', { size: formatBytes(locale, maxBytes) }));
  }
  switch (def.type) {
    case 'text':
    case 'longtext':
    case 'secret':
    case 'url':
      if (def.type === 'url') out.push(t('constraint.url'));
      out.push(countRange(t, locale, c.min_chars, c.max_chars, 'chars'));
      break;
    case 'multiselect':
      out.push(countRange(t, locale, c.min_count, c.max_count, 'choices'));
      break;
    case 'color_list':
      out.push(countRange(t, locale, c.min_count, c.max_count, 'colours'));
      break;
    case 'number':
      if (c.integer) out.push(t('constraint.integer'));
      if (c.min !== undefined && c.max !== undefined)
        out.push(t('constraint.between', { min: n(c.min), max: n(c.max) }));
      else if (c.min !== undefined) out.push(t('constraint.min', { n: n(c.min) }));
      else if (c.max !== undefined) out.push(t('constraint.max', { n: n(c.max) }));
      break;
    case 'date':
      if (c.min_date) out.push(t('constraint.min_date', { date: formatDate(locale, c.min_date) }));
      if (c.max_date) out.push(t('constraint.max_date', { date: formatDate(locale, c.max_date) }));
      break;
    case 'phone':
      if (!country) out.push(t('constraint.phone'));
      break;
  }
  return out.filter((s): s is string => typeof s === 'string' && s.length > 0);
}
