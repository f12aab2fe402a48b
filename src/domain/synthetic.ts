import { cachedPattern, samplePatternValue } from './pattern.js';
import { acceptedFormats } from './values.js';
import type { Format, ItemDefinition } from './items.js';

/**
 * Synthetic client answers for test mode's simulate action: values that satisfy each item's type and
 * constraints, so a test-mode intake can be driven to completion without a person.
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const SAMPLE_TEXT =
  'Synthetic answer from test mode. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';

/**
 * Sample text of the length the bounds ask for (80 characters when they leave it open). A non-zero
 * `variant` ends in its digits (the sample has none), so the values of a uniqueItems array differ.
 */
function text(min: number, max: number | undefined, variant = 0): string {
  const target = Math.max(min, Math.min(max ?? 80, 80));
  let out = '';
  while (out.length < target) out += SAMPLE_TEXT;
  out = out.slice(0, target);
  const suffix = variant === 0 ? '' : String(variant);
  return suffix.length <= target ? out.slice(0, target - suffix.length) + suffix : out;
}

const finite = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A number within minimum/maximum (inclusive or exclusive) that is a multiple of multipleOf and whole
 * for integers: the smallest such multiple above the lower bound, else the one nearest 1.
 */
function numberForSchema(schema: Record<string, unknown>, integer: boolean, variant: number): number {
  const step = finite(schema.multipleOf) ?? 1;
  const min = finite(schema.minimum);
  const exclusiveMin = finite(schema.exclusiveMinimum);
  const max = finite(schema.maximum);
  const exclusiveMax = finite(schema.exclusiveMaximum);
  const allowed = (v: number) =>
    (min === undefined || v >= min) &&
    (exclusiveMin === undefined || v > exclusiveMin) &&
    (max === undefined || v <= max) &&
    (exclusiveMax === undefined || v < exclusiveMax) &&
    (!integer || Number.isInteger(v)) &&
    // The same test Ajv applies for multipleOf.
    (schema.multipleOf === undefined || Number.isInteger(v / step));
  const lower = Math.max(min ?? -Infinity, exclusiveMin ?? -Infinity);
  const upper = Math.min(max ?? Infinity, exclusiveMax ?? Infinity);
  const from = Number.isFinite(lower)
    ? Math.ceil(lower / step)
    : Math.min(Math.ceil(1 / step), Number.isFinite(upper) ? Math.floor(upper / step) : Infinity);
  const found: number[] = [];
  for (let k = from; found.length <= variant && k < from + 100; k++)
    if (allowed(k * step)) found.push(k * step);
  for (let k = from - 1; found.length <= variant && k > from - 100; k--)
    if (allowed(k * step)) found.push(k * step);
  if (found.length === 0 && Number.isFinite(lower) && Number.isFinite(upper)) found.push((lower + upper) / 2);
  return found[variant % Math.max(1, found.length)] ?? (Number.isFinite(lower) ? lower : 1);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Samples for the string formats Ajv knows (ajv-formats), varied by `variant`. */
const FORMAT_SAMPLES: Record<string, (variant: number) => string> = {
  email: (v) => (v === 0 ? 'client@example.com' : `client${v}@example.com`),
  date: (v) => `2026-01-${pad(15 + (v % 14))}`,
  'date-time': (v) => `2026-01-15T10:${pad(v % 60)}:00Z`,
  'iso-date-time': (v) => `2026-01-15T10:${pad(v % 60)}:00`,
  time: (v) => `10:${pad(v % 60)}:00Z`,
  'iso-time': (v) => `10:${pad(v % 60)}:00`,
  duration: (v) => `P${v + 1}D`,
  uri: (v) => (v === 0 ? 'https://example.com' : `https://example.com/${v}`),
  url: (v) => (v === 0 ? 'https://example.com' : `https://example.com/${v}`),
  'uri-reference': (v) => (v === 0 ? 'https://example.com' : `https://example.com/${v}`),
  'uri-template': (v) => (v === 0 ? 'https://example.com' : `https://example.com/${v}`),
  hostname: (v) => (v === 0 ? 'example.com' : `host${v}.example.com`),
  ipv4: (v) => `192.0.2.${(v % 254) + 1}`,
  ipv6: (v) => `2001:db8::${((v % 65535) + 1).toString(16)}`,
  uuid: (v) => `00000000-0000-4000-8000-${pad(v % 1e12, 12)}`,
  regex: (v) => (v === 0 ? '.*' : `^a{${v}}$`),
  'json-pointer': (v) => (v === 0 ? '/a' : `/a${v}`),
  'relative-json-pointer': (v) => String(v),
  byte: () => 'c3ludGhldGlj',
};

/**
 * A value for a JSON Schema: the first enum/const, properties filled, bounds respected. `variant`
 * picks a different value of the same shape (the items of an array differ, for uniqueItems).
 */
export function valueForSchema(schema: Record<string, unknown>, depth = 0, variant = 0): Json {
  if (depth > 8) return null;
  if ('const' in schema) return schema.const as Json;
  if (Array.isArray(schema.enum) && schema.enum.length > 0)
    return schema.enum[variant % schema.enum.length] as Json;
  if (Array.isArray(schema.examples) && schema.examples.length > 0)
    return schema.examples[variant % schema.examples.length] as Json;
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options) && isRecord(options[0])) return valueForSchema(options[0], depth + 1, variant);
  const type = Array.isArray(schema.type) ? (schema.type[0] as string) : (schema.type as string | undefined);
  switch (type ?? (schema.properties ? 'object' : 'string')) {
    case 'object': {
      const properties = isRecord(schema.properties) ? schema.properties : {};
      const out: Record<string, Json> = {};
      for (const [name, sub] of Object.entries(properties))
        out[name] = valueForSchema(isRecord(sub) ? sub : {}, depth + 1, variant);
      // Required names the schema does not describe take any value additionalProperties allows.
      const extra = isRecord(schema.additionalProperties) ? schema.additionalProperties : {};
      for (const name of Array.isArray(schema.required) ? schema.required : []) {
        if (typeof name === 'string' && !Object.hasOwn(out, name))
          out[name] = valueForSchema(extra, depth + 1, variant);
      }
      // An empty object is no answer (it cannot be submitted): say something where the schema allows.
      if (Object.keys(out).length === 0 && schema.additionalProperties !== false) {
        out.note = valueForSchema(extra, depth + 1, variant);
      }
      return out;
    }
    case 'array': {
      const items = isRecord(schema.items) ? schema.items : {};
      const count = Math.min(Math.max(1, finite(schema.minItems) ?? 1), finite(schema.maxItems) ?? Infinity);
      return Array.from({ length: count }, (_, i) => valueForSchema(items, depth + 1, variant + i));
    }
    case 'integer':
    case 'number':
      return numberForSchema(schema, type === 'integer', variant);
    case 'boolean':
      return variant % 2 === 0;
    case 'null':
      return null;
    default: {
      const sample = typeof schema.format === 'string' ? FORMAT_SAMPLES[schema.format] : undefined;
      if (sample) return sample(variant);
      const maxLength = finite(schema.maxLength);
      return text(finite(schema.minLength) ?? Math.min(1, maxLength ?? 1), maxLength, variant);
    }
  }
}

const SECRET = 'test-secret-value';

/** A value the pattern accepts within the length bounds, or null when the sampler finds none. */
function patternValue(source: string, min: number, max: number | undefined): Json {
  const compiled = cachedPattern(source);
  if (!compiled.ok) return null;
  const value = samplePatternValue(compiled.pattern);
  if (value === undefined) return null;
  const length = [...value].length;
  return length >= min && length <= (max ?? Infinity) ? value : null;
}
const URLS = ['https://example.com', 'https://a.co', 'http://a'];

/** A value-kind item's synthetic answer (null for a text pattern the sampler cannot satisfy). */
export function syntheticValue(def: ItemDefinition): Json {
  const c = def.constraints;
  switch (def.type) {
    case 'text':
    case 'longtext':
    case 'secret': {
      if (c.pattern) return patternValue(c.pattern, c.min_chars ?? 0, c.max_chars);
      const fits = SECRET.length >= (c.min_chars ?? 0) && SECRET.length <= (c.max_chars ?? Infinity);
      return def.type === 'secret' && fits ? SECRET : text(c.min_chars ?? 1, c.max_chars);
    }
    case 'structured':
      return valueForSchema(def.schema ?? { type: 'object' });
    case 'url':
      return URLS.find((url) => url.length <= (c.max_chars ?? Infinity)) ?? 'http://a';
    case 'email':
      return 'client@example.com';
    case 'phone':
      return '+14155550123';
    case 'date':
      return c.min_date ?? c.max_date ?? '2026-01-15';
    case 'boolean':
      return true;
    case 'number': {
      const value = c.min ?? c.max ?? 1;
      if (!c.integer || Number.isInteger(value)) return value;
      // A whole number: the first at or above min, else the last at or below max.
      return c.min !== undefined ? Math.ceil(c.min) : Math.floor(value);
    }
    case 'select':
      return def.options?.[0]?.value ?? null;
    case 'multiselect':
      return (def.options ?? []).slice(0, Math.max(1, c.min_count ?? 1)).map((o) => o.value);
    case 'color_list':
      return Array.from(
        { length: Math.max(1, c.min_count ?? 1) },
        (_, i) => `#${(0x1a2b3c + i).toString(16)}`,
      );
    default:
      return null;
  }
}

/** What file a file-kind item should get: a format it accepts (raster preferred) and how many. */
export function syntheticFilePlan(def: ItemDefinition): {
  format: Format;
  count: number;
  width: number;
  transparent: boolean;
} {
  const formats = acceptedFormats(def) ?? ['pdf'];
  const preference: Format[] = ['png', 'webp', 'jpg', 'gif', 'pdf', 'txt', 'csv', 'svg'];
  const format = preference.find((f) => formats.includes(f)) ?? formats[0] ?? 'pdf';
  const count = Math.max(1, def.constraints.min_count ?? 1);
  return {
    format,
    count,
    width: Math.max(def.constraints.min_width ?? 64, def.constraints.min_height ?? 0, 64),
    transparent: def.constraints.transparent_background === true,
  };
}
