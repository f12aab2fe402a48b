import { acceptedFormats } from './values.js';
import type { Format, ItemDefinition } from './items.js';

/**
 * Synthetic client answers for test mode's simulate action: values that satisfy each item's type and
 * constraints, so a test-mode intake can be driven to completion without a person.
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const SAMPLE_TEXT =
  'Synthetic answer from test mode. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';

function text(min: number, max: number | undefined): string {
  const target = Math.max(min, Math.min(max ?? 80, 80));
  let out = '';
  while (out.length < target) out += SAMPLE_TEXT;
  return out.slice(0, target);
}

/** A value for a JSON Schema: the first enum/const, required properties filled, bounds respected. */
export function valueForSchema(schema: Record<string, unknown>, depth = 0): Json {
  if (depth > 8) return null;
  if ('const' in schema) return schema.const as Json;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0] as Json;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0] as Json;
  const options = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (Array.isArray(options) && options[0]) return valueForSchema(options[0], depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type[0] as string) : (schema.type as string | undefined);
  switch (type ?? (schema.properties ? 'object' : 'string')) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const out: Record<string, Json> = {};
      for (const [name, sub] of Object.entries(properties)) out[name] = valueForSchema(sub, depth + 1);
      return out;
    }
    case 'array': {
      const items = (schema.items ?? {}) as Record<string, unknown>;
      const count = Math.max(1, Number(schema.minItems ?? 1));
      return Array.from({ length: count }, () => valueForSchema(items, depth + 1));
    }
    case 'integer':
    case 'number': {
      const min = Number(schema.minimum ?? schema.exclusiveMinimum ?? 1);
      const value = schema.exclusiveMinimum !== undefined ? min + 1 : min;
      return type === 'integer' ? Math.ceil(value) : value;
    }
    case 'boolean':
      return true;
    case 'null':
      return null;
    default: {
      switch (schema.format) {
        case 'email':
          return 'client@example.com';
        case 'date':
          return '2026-01-15';
        case 'date-time':
          return '2026-01-15T10:00:00Z';
        case 'uri':
        case 'url':
          return 'https://example.com';
        default:
          return text(Number(schema.minLength ?? 1), schema.maxLength as number | undefined);
      }
    }
  }
}

/** A value-kind item's synthetic answer. */
export function syntheticValue(def: ItemDefinition): Json {
  const c = def.constraints;
  switch (def.type) {
    case 'text':
    case 'longtext':
    case 'secret':
      if (c.pattern) return null;
      return def.type === 'secret' ? 'test-secret-value' : text(c.min_chars ?? 1, c.max_chars);
    case 'structured':
      return valueForSchema(def.schema ?? { type: 'object' });
    case 'url':
      return 'https://example.com';
    case 'email':
      return 'client@example.com';
    case 'phone':
      return '+14155550123';
    case 'date':
      return c.min_date ?? c.max_date ?? '2026-01-15';
    case 'boolean':
      return true;
    case 'number':
      return c.min ?? c.max ?? 1;
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
