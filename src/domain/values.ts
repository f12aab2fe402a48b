import { valueSizeProblem } from './schema-limits.js';
import { MAX_PATTERN_VALUE_LENGTH, cachedPattern, matchesPattern } from './pattern.js';
import { canonicalFormat, isFileType, type Format, type ItemDefinition } from './items.js';
import { phoneInE164 } from './phone.js';

/**
 * Constraint checks on what the client supplies: pure, so the portal, the test-mode simulator
 * and the PATCH "would this answer still be valid" check all agree.
 */
export type Check<T> = { ok: true; value: T } | { ok: false; constraint: string; message: string };
const pass = <T>(value: T): Check<T> => ({ ok: true, value });
const fail = <T>(constraint: string, message: string): Check<T> => ({ ok: false, constraint, message });

/** Validates a value against a JSON Schema; returns error text or undefined. Injected (Ajv lives at the edge). */
export type SchemaValidator = (schema: Record<string, unknown>, value: unknown) => string | undefined;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const HEX_COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

/**
 * A web address as people type it: "baeckerei-mueller.de" means https://baeckerei-mueller.de. Only
 * an address without any scheme gets one; "ftp://…" stays as typed (and is refused as not http(s)).
 */
export function normalizeUrl(value: string): string {
  const trimmed = value.trim();
  // "mailto:…" names a scheme (kept, then refused); "localhost:3000" is a host and its port.
  if (trimmed === '' || /^[a-z][a-z0-9+.-]*:(?!\d)/i.test(trimmed)) return trimmed;
  return `https://${trimmed.replace(/^\/+/, '')}`;
}

/** YYYY-MM-DD naming a real day: Date.parse alone rolls 2026-02-30 over to 2 March. */
function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const time = Date.parse(`${value}T00:00:00Z`);
  return !Number.isNaN(time) && new Date(time).toISOString().slice(0, 10) === value;
}

function checkText(def: ItemDefinition, value: unknown): Check<string> {
  if (typeof value !== 'string') return fail('type', 'value must be a string');
  const length = [...value].length;
  const c = def.constraints;
  if (c.max_chars !== undefined && length > c.max_chars) {
    return fail('max_chars', `${length} characters is more than the ${c.max_chars} allowed`);
  }
  if (c.pattern !== undefined && value.length > 0) return checkPattern(c.pattern, value, length);
  return pass(value);
}

/** The pattern runs on RE2 (domain/pattern.ts), never on the backtracking RegExp. */
function checkPattern(source: string, value: string, length: number): Check<string> {
  const compiled = cachedPattern(source);
  if (!compiled.ok) return fail('pattern', compiled.message);
  if (length > MAX_PATTERN_VALUE_LENGTH) {
    return fail('pattern', `a value with a pattern may have at most ${MAX_PATTERN_VALUE_LENGTH} characters`);
  }
  return matchesPattern(compiled.pattern, value)
    ? pass(value)
    : fail('pattern', 'value does not have the expected form');
}

/** What the value's meaning depends on besides its item: the client's country (phone numbers). */
export interface AnswerContext {
  /** ISO 3166-1 alpha-2: the country of a phone number typed without "+". */
  country?: string | undefined;
}

/**
 * A draft value the client may save (autosave): the type and upper bounds must hold; lower bounds
 * (min_chars, min_count, required) wait for submission. Values are taken as people type them and
 * returned in their stored form (a web address with https://, a phone number in E.164).
 */
export function checkDraftValue(
  def: ItemDefinition,
  value: unknown,
  validateSchema: SchemaValidator,
  context: AnswerContext = {},
): Check<unknown> {
  if (isFileType(def.type)) return fail('type', `${def.type} items take files, not a value`);
  const c = def.constraints;
  switch (def.type) {
    case 'text':
    case 'longtext':
    case 'secret':
      return checkText(def, value);
    case 'structured': {
      if (typeof value !== 'object' || value === null)
        return fail('schema', 'value must be a JSON object or array');
      // Measured before anything walks it: a value nested thousands deep would exhaust the stack.
      const tooLarge = valueSizeProblem(value);
      return tooLarge ? fail('schema', tooLarge) : pass(value);
    }
    case 'url': {
      if (typeof value !== 'string') return fail('type', 'value must be a string');
      const address = normalizeUrl(value);
      if (address === '') return pass(address);
      try {
        const url = new URL(address);
        if (url.protocol !== 'http:' && url.protocol !== 'https:')
          return fail('type', 'value must be an http(s) URL');
      } catch {
        return fail('type', 'value must be a URL such as https://example.com');
      }
      return checkText(def, address);
    }
    case 'email':
      if (typeof value !== 'string') return fail('type', 'value must be a string');
      return value === '' || EMAIL.test(value) ? pass(value) : fail('type', 'value must be an email address');
    case 'phone': {
      if (typeof value !== 'string') return fail('type', 'value must be a string');
      if (value.trim() === '') return pass('');
      const number = phoneInE164(value, context.country);
      if (number) return pass(number);
      return fail(
        'type',
        context.country
          ? `value must be a phone number of ${context.country} or one with its country code, e.g. +14155550123`
          : 'value must be a phone number with its country code, e.g. +14155550123',
      );
    }
    case 'date': {
      if (typeof value !== 'string' || !isCalendarDate(value)) {
        return fail('type', 'value must be a date YYYY-MM-DD');
      }
      if (c.min_date && value < c.min_date) return fail('min_date', `date must be on or after ${c.min_date}`);
      if (c.max_date && value > c.max_date)
        return fail('max_date', `date must be on or before ${c.max_date}`);
      return pass(value);
    }
    case 'boolean':
      return typeof value === 'boolean' ? pass(value) : fail('type', 'value must be true or false');
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return fail('type', 'value must be a number');
      if (c.integer && !Number.isInteger(value)) return fail('integer', 'value must be a whole number');
      if (c.min !== undefined && value < c.min) return fail('min', `value must be at least ${c.min}`);
      if (c.max !== undefined && value > c.max) return fail('max', `value must be at most ${c.max}`);
      return pass(value);
    }
    case 'select': {
      const allowed = (def.options ?? []).map((o) => o.value);
      return typeof value === 'string' && allowed.includes(value)
        ? pass(value)
        : fail('options', `value must be one of ${allowed.join(', ')}`);
    }
    case 'multiselect': {
      const allowed = (def.options ?? []).map((o) => o.value);
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && allowed.includes(v))) {
        return fail('options', `value must be a list of ${allowed.join(', ')}`);
      }
      if (new Set(value).size !== value.length) return fail('options', 'each choice may appear once');
      if (c.max_count !== undefined && value.length > c.max_count) {
        return fail('max_count', `at most ${c.max_count} choices`);
      }
      return pass(value);
    }
    case 'color_list': {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && HEX_COLOR.test(v))) {
        return fail('type', 'value must be a list of hex colours such as #1a2b3c');
      }
      if (c.max_count !== undefined && value.length > c.max_count)
        return fail('max_count', `at most ${c.max_count} colours`);
      return pass(value.map((v) => (v as string).toLowerCase()));
    }
    default:
      void validateSchema;
      return fail('type', `unknown item type ${def.type}`);
  }
}

/** Nothing in it: no value, an empty text, list or object. False and 0 are answers. */
export function isEmptyValue(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

/**
 * What a submission must satisfy: something in it, the draft checks, lower bounds and the JSON Schema.
 * An empty item is never submitted, optional or not: a submission says "this is my answer", and an
 * optional item the client leaves alone simply stays open.
 */
export function checkSubmission(
  def: ItemDefinition,
  supplied: { value: unknown; fileCount: number },
  validateSchema: SchemaValidator,
): Check<null> {
  const c = def.constraints;
  if (isFileType(def.type)) {
    // A required item needs something whatever min_count says; min_count bounds how many files
    // make an answer.
    if (supplied.fileCount === 0 && !def.required) {
      return fail('empty', 'there is nothing to send yet: upload a file first');
    }
    const min = Math.max(c.min_count ?? 0, def.required ? 1 : 0);
    if (supplied.fileCount < min) {
      return fail(
        c.min_count !== undefined && c.min_count >= min ? 'min_count' : 'required',
        `at least ${min} file${min === 1 ? '' : 's'} needed; ${supplied.fileCount} uploaded`,
      );
    }
    const max = c.max_count ?? (def.type === 'file_list' ? Infinity : 1);
    if (supplied.fileCount > max)
      return fail('max_count', `at most ${max} file${max === 1 ? '' : 's'}; ${supplied.fileCount} uploaded`);
    return pass(null);
  }
  if (isEmptyValue(supplied.value)) {
    return def.required
      ? fail('required', 'this item needs a value')
      : fail('empty', 'there is nothing to send yet: fill it in first');
  }
  const draft = checkDraftValue(def, supplied.value, validateSchema);
  if (!draft.ok) return draft;
  if (
    typeof supplied.value === 'string' &&
    c.min_chars !== undefined &&
    [...supplied.value].length < c.min_chars
  ) {
    return fail('min_chars', `at least ${c.min_chars} characters needed`);
  }
  if (Array.isArray(supplied.value) && c.min_count !== undefined && supplied.value.length < c.min_count) {
    return fail('min_count', `at least ${c.min_count} entries needed`);
  }
  if (def.type === 'structured' && def.schema) {
    const error = validateSchema(def.schema, supplied.value);
    if (error) return fail('schema', error);
  }
  return pass(null);
}

/** What inspection of an uploaded file found (by content, not by name). */
export interface FileFacts {
  format: Format | undefined;
  contentType: string;
  bytes: number;
  width?: number | undefined;
  height?: number | undefined;
  /** Whether the image has transparent pixels (undefined: cannot tell). */
  transparent?: boolean | undefined;
}

/** The formats an item accepts: its `formats`, or any image format for image items, or anything. */
export function acceptedFormats(def: ItemDefinition): Format[] | undefined {
  const listed = def.constraints.formats?.map(canonicalFormat).filter((f): f is Format => f !== undefined);
  if (listed && listed.length > 0) return listed;
  if (def.type === 'image') return ['png', 'jpg', 'svg', 'heic', 'webp', 'gif'];
  return undefined;
}

/** Checks one uploaded file against the item's constraints (size is checked while streaming too). */
export function checkFile(def: ItemDefinition, facts: FileFacts, filesAlready: number): Check<null> {
  const c = def.constraints;
  const max = c.max_count ?? (def.type === 'file_list' ? Infinity : 1);
  if (filesAlready >= max) {
    return fail('max_count', `this item takes at most ${max} file${max === 1 ? '' : 's'}; remove one first`);
  }
  if (c.max_bytes !== undefined && facts.bytes > c.max_bytes) {
    return fail('max_bytes', `the file is ${facts.bytes} bytes; at most ${c.max_bytes} allowed`);
  }
  const formats = acceptedFormats(def);
  if (formats && (!facts.format || !formats.includes(facts.format))) {
    return fail(
      'formats',
      `the file's content is ${facts.format ?? facts.contentType}; accepted: ${formats.join(', ')}`,
    );
  }
  if (c.min_width !== undefined && facts.format !== 'svg') {
    if (facts.width === undefined) return fail('min_width', 'the image width could not be read');
    if (facts.width < c.min_width)
      return fail('min_width', `the image is ${facts.width} px wide; at least ${c.min_width} px needed`);
  }
  if (c.min_height !== undefined && facts.format !== 'svg') {
    if (facts.height === undefined) return fail('min_height', 'the image height could not be read');
    if (facts.height < c.min_height)
      return fail('min_height', `the image is ${facts.height} px high; at least ${c.min_height} px needed`);
  }
  if (c.transparent_background && facts.transparent !== true) {
    return fail(
      'transparent_background',
      facts.transparent === false
        ? 'the image has no transparent background'
        : 'the image has no alpha channel, so its background cannot be transparent',
    );
  }
  return pass(null);
}
