import fc from 'fast-check';
import type { Operation } from './openapi-contract.js';

/**
 * Generators of bad requests, shaped by what an operation documents: its body's field names (to
 * miss, mistype and pad them), its query parameters and its path parameters.
 */

/** Strings that have broken parsers, paths, headers and databases elsewhere. */
const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '../../../../etc/passwd',
  '..\\..\\..\\windows\\win.ini',
  '%2e%2e%2f%2e%2e%2f',
  '....//....//',
  '/',
  '.',
  '..',
  '\u202eevil\u202c',
  '\uFEFF',
  '\uD800',
  'Ω≈ç√∫˜µ≤≥÷',
  '😀'.repeat(64),
  'é'.normalize('NFD').repeat(64),
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "' OR '1'='1' --",
  '"; DROP TABLE intakes; --',
  '${jndi:ldap://127.0.0.1/a}',
  '{{7*7}}',
  '__proto__',
  'constructor',
  'prototype',
  'in_',
  'svc_live_',
  '\r\nX-Injected: 1',
  'NaN',
  'null',
  'true',
  '-1',
  '1e999',
];

export const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 300_000 }).map((n) => 'x'.repeat(n)) },
);

const nastyNumber = fc.oneof(
  fc.constantFrom(-1, -0, 0, 1.5, -1e308, 1e308, 2 ** 53 + 1, -(2 ** 63), Number.MIN_VALUE),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** A value nested `depth` levels deep, arrays and objects alternating. */
function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

/** Any JSON value, biased towards the ones that break things. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  nastyString,
  nastyNumber,
  fc.constantFrom(null, true, false, [], {}, [null], { '': '' }),
  fc.integer({ min: 10, max: 3_000 }).map(nested),
  fc.integer({ min: 1_000, max: 100_000 }).map((n) => new Array<number>(n).fill(1)),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Field names a caller must never be able to set, and a few odd ones. */
const FORBIDDEN_FIELDS = [
  'account_id',
  'livemode',
  'status',
  'id',
  'created_at',
  '__proto__',
  'constructor',
  'key_hash',
  'secret_hash',
];

export type BodyCase =
  | { kind: 'json'; label: string; value: unknown }
  | { kind: 'raw'; label: string; text: string; contentType: string | undefined };

function propertiesOf(schema: Record<string, unknown> | undefined): string[] {
  const properties = schema?.properties;
  return properties && typeof properties === 'object' ? Object.keys(properties) : [];
}

/** An object that uses the documented field names with wrong values, some left out, some added. */
function mistypedObject(fields: string[]): fc.Arbitrary<BodyCase> {
  const known = fields.length ? fc.subarray(fields) : fc.constant<string[]>([]);
  return fc
    .record({
      keep: known,
      values: fc.array(nastyValue, { minLength: fields.length, maxLength: fields.length }),
      extra: fc.option(fc.oneof(fc.constantFrom(...FORBIDDEN_FIELDS), fc.string({ maxLength: 12 })), {
        nil: undefined,
      }),
      extraValue: nastyValue,
    })
    .map(({ keep, values, extra, extraValue }) => {
      const value: Record<string, unknown> = {};
      keep.forEach((field, i) => {
        value[field] = values[i];
      });
      // defineProperty: "__proto__" becomes a real key of the JSON, as an attacker would send it.
      if (extra !== undefined) {
        Object.defineProperty(value, extra, { value: extraValue, enumerable: true, writable: true });
      }
      return { kind: 'json' as const, label: `fields ${[...keep, extra].filter(Boolean).join(',')}`, value };
    });
}

const rawBodies: fc.Arbitrary<BodyCase> = fc.oneof(
  fc
    .constantFrom('{', '{"a":', '[1,2', '{"a":1}}', "{'a':1}", 'nul', '\u0000', '{"a":1,}', '"\\uD800"')
    .map((text) => ({
      kind: 'raw' as const,
      label: 'malformed JSON',
      text,
      contentType: 'application/json',
    })),
  fc.integer({ min: 5_000, max: 60_000 }).map((depth) => ({
    kind: 'raw' as const,
    label: `nesting ${depth}`,
    text: '['.repeat(depth) + ']'.repeat(depth),
    contentType: 'application/json',
  })),
  fc.constantFrom('', ' ', '\n').map((text) => ({
    kind: 'raw' as const,
    label: 'empty body',
    text,
    contentType: 'application/json',
  })),
  fc
    .constantFrom('text/plain', 'application/xml', 'text/html', 'application/x-www-form-urlencoded')
    .map((contentType) => ({
      kind: 'raw' as const,
      label: `content type ${contentType}`,
      text: '{}',
      contentType,
    })),
  fc.constant({
    kind: 'raw' as const,
    label: 'multipart without boundary',
    text: 'garbage',
    contentType: 'multipart/form-data',
  }),
  fc.constant({
    kind: 'raw' as const,
    label: 'over the body limit',
    text: JSON.stringify({ project_name: 'x'.repeat(1_200_000) }),
    contentType: 'application/json',
  }),
  fc.constant({
    kind: 'raw' as const,
    label: 'charset parameter and BOM',
    text: '\uFEFF{}',
    contentType: 'application/json; charset=utf-16',
  }),
);

export function bodyCases(op: Operation): fc.Arbitrary<BodyCase> {
  return fc.oneof(
    { weight: 3, arbitrary: mistypedObject(propertiesOf(op.bodySchema)) },
    {
      weight: 1,
      arbitrary: nastyValue.map((value) => ({ kind: 'json' as const, label: 'not an object', value })),
    },
    { weight: 2, arbitrary: rawBodies },
  );
}

export interface PathCase {
  /** Parameter values; `undefined` keeps the real id of the world. */
  values: Record<string, string | undefined>;
}

export function pathCases(op: Operation): fc.Arbitrary<PathCase> {
  const one = fc.option(nastyString, { nil: undefined, freq: 2 });
  return fc
    .array(one, { minLength: op.pathParams.length, maxLength: op.pathParams.length })
    .map((picked) => ({
      values: Object.fromEntries(op.pathParams.map((name, i) => [name, picked[i]])),
    }));
}

/** A query string of documented parameters (and `limit`, which every list must bound) set badly. */
export function queryCases(op: Operation): fc.Arbitrary<string> {
  const names = [...op.queryParams.map((param) => param.name), 'limit', 'offset'];
  const badValue = fc.oneof(
    fc.constantFrom('101', '1000000', '-1', '0', '1e309', 'abc', '', '%00', 'null', 'true', '1.5'),
    nastyString.map((value) => value.slice(0, 2_000)),
  );
  return fc
    .array(fc.tuple(fc.constantFrom(...names), badValue), { maxLength: 4 })
    .map((pairs) => new URLSearchParams(pairs).toString());
}

export const fuzzSeed = (): number => Number(process.env.FUZZ_SEED ?? 20261123);
export const fuzzRuns = (): number => Number(process.env.FUZZ_RUNS ?? 25);
