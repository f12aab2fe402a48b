import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { portabilityProblems, portableSchema, type JsonSchema } from './mcp.portable.js';

const ajv = new Ajv({ strict: false });
function accepts(schema: JsonSchema, value: unknown): boolean {
  return ajv.validate(schema, value);
}

/** Schemas as zod writes them, with each shape the derivation rewrites. */
const SHAPES: Record<string, JsonSchema> = {
  'nullable string': { type: ['string', 'null'], maxLength: 3, description: 'd' },
  'nullable enum': { type: ['string', 'null'], enum: ['a', 'b', null] },
  'enum without its null': { type: ['string', 'null'], enum: ['a'] },
  'nullable integer': { type: ['integer', 'null'], exclusiveMinimum: 0, maximum: 5 },
  'several types': {
    type: ['string', 'number', 'array'],
    minLength: 2,
    minimum: 1,
    items: { type: 'string' },
  },
  const: { type: 'boolean', const: true },
  'exclusive integer bounds': { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10, minimum: -5 },
  record: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} },
  'record with key names': { type: 'object', propertyNames: { pattern: '^a' }, additionalProperties: {} },
  'array of anything': { type: 'array', items: {}, maxItems: 2 },
  'anything, described': { description: 'what it holds' },
  'nested anyOf': { anyOf: [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, { type: 'null' }] },
  'open object': {
    type: 'object',
    properties: { a: { type: ['number', 'null'] } },
    required: ['a'],
    additionalProperties: true,
  },
};

const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  1,
  5,
  6,
  10,
  -5,
  -6,
  1.5,
  '',
  'a',
  'b',
  'abc',
  'abcd',
  [],
  ['x'],
  ['x', 'y', 'z'],
  [1],
  {},
  { a: null },
  { a: 1 },
  { a: 'x' },
  { b: 1 },
];

describe('portableSchema', () => {
  it.each(Object.entries(SHAPES))('%s: accepts exactly what the original accepts', (_name, schema) => {
    const derived = portableSchema(schema);
    for (const value of VALUES) {
      expect(accepts(derived, value), JSON.stringify(value)).toBe(accepts(schema, value));
    }
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 3 }),
        (value) => accepts(derived, value) === accepts(schema, value),
      ),
      { numRuns: 300 },
    );
  });

  it('folds a nullable type into anyOf, the annotations staying on the field', () => {
    expect(portableSchema(SHAPES['nullable string'] ?? {})).toEqual({
      description: 'd',
      anyOf: [{ type: 'string', maxLength: 3 }, { type: 'null' }],
    });
    expect(portableSchema(SHAPES['nullable enum'] ?? {})).toEqual({
      anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }],
    });
    expect(portableSchema(SHAPES['enum without its null'] ?? {})).toEqual({ type: 'string', enum: ['a'] });
    expect(portableSchema(SHAPES['nullable integer'] ?? {})).toEqual({
      anyOf: [{ type: 'integer', minimum: 1, maximum: 5 }, { type: 'null' }],
    });
  });

  it('writes const as an enum and exclusive integer bounds as inclusive ones', () => {
    expect(portableSchema({ type: 'boolean', const: true })).toEqual({ type: 'boolean', enum: [true] });
    expect(portableSchema(SHAPES['exclusive integer bounds'] ?? {})).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 9,
    });
  });

  it('leaves out what says nothing, and describes what is free-form', () => {
    expect(portableSchema({ $schema: 'http://json-schema.org/draft-07/schema#', ...SHAPES.record })).toEqual({
      type: 'object',
    });
    expect(portableSchema(SHAPES['array of anything'] ?? {})).toEqual({ type: 'array', maxItems: 2 });
    const anything = portableSchema({ type: 'object', properties: { v: { description: 'any answer' } } });
    expect(anything.properties).toEqual({
      v: {
        description: 'any answer',
        anyOf: ['string', 'number', 'boolean', 'object', 'array', 'null'].map((type) => ({ type })),
      },
    });
    expect(portabilityProblems(anything)).toEqual([]);
  });

  it('keeps what it cannot rewrite exactly, for the check to report', () => {
    const kept = portableSchema({
      type: 'object',
      properties: {
        x: { oneOf: [{ type: 'string' }, { type: 'number' }] },
        n: { type: 'number', exclusiveMinimum: 0 },
      },
    });
    expect(portabilityProblems(kept)).toEqual([
      '/properties/x: keyword oneOf is not portable',
      '/properties/x: an empty schema (no type, anyOf or enum)',
      '/properties/n: keyword exclusiveMinimum is not portable',
    ]);
  });

  it('derives schemas the check passes', () => {
    for (const [name, schema] of Object.entries(SHAPES)) {
      if (name === 'record with key names') continue; // a key pattern has no portable form
      const problems = portabilityProblems({
        type: 'object',
        properties: { field: { description: 'what it holds', anyOf: [portableSchema(schema)] } },
      });
      expect(problems, name).toEqual([]);
    }
  });
});

describe('portabilityProblems', () => {
  const root = (field: unknown): JsonSchema => ({ type: 'object', properties: { field } });

  it('passes a portable schema', () => {
    expect(
      portabilityProblems({
        type: 'object',
        description: 'x',
        properties: {
          a: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] },
          b: { type: 'array', items: { type: 'integer', minimum: 1 }, maxItems: 3 },
          c: { type: 'string', enum: ['x', 'y'], default: 'x' },
          d: { type: 'object', description: 'free-form: the caller’s own settings' },
        },
        required: ['a'],
        additionalProperties: false,
      }),
    ).toEqual([]);
  });

  it.each([
    [
      'a type array',
      root({ type: ['string', 'null'] }),
      '/properties/field: type is an array (["string","null"]); use anyOf',
    ],
    ['an empty schema', root({}), '/properties/field: an empty schema (no type, anyOf or enum)'],
    [
      'an annotation alone',
      root({ description: 'x' }),
      '/properties/field: an empty schema (no type, anyOf or enum)',
    ],
    [
      'a reference',
      root({ $ref: '#/definitions/x' }),
      '/properties/field: $ref (hosts that do not follow references see nothing)',
    ],
    ['const', root({ type: 'string', const: 'x' }), '/properties/field: keyword const is not portable'],
    [
      'propertyNames',
      root({ type: 'object', propertyNames: { type: 'string' }, description: 'x' }),
      '/properties/field: keyword propertyNames is not portable',
    ],
    [
      'a boolean schema',
      { type: 'object', additionalProperties: true },
      '/additionalProperties: a boolean schema (true); write what it holds instead',
    ],
    [
      'an unknown format',
      root({ type: 'string', format: 'hostname' }),
      '/properties/field: format hostname is not portable',
    ],
    [
      'a free-form object without a description',
      root({ type: 'object' }),
      '/properties/field: a free-form object without a description of what it holds',
    ],
    [
      'a free-form array without a description',
      root({ type: 'array' }),
      '/properties/field: a free-form array without a description of what it holds',
    ],
    [
      '$schema',
      { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' },
      '/: keyword $schema is not portable',
    ],
    [
      'a root that is not an object',
      { anyOf: [{ type: 'object' }, { type: 'null' }] },
      '/: a tool schema must be {"type": "object"} at its root',
    ],
    [
      'a problem deep inside',
      root({ type: 'array', items: { anyOf: [{ type: 'object', properties: { x: {} } }] } }),
      '/properties/field/items/anyOf/0/properties/x: an empty schema (no type, anyOf or enum)',
    ],
  ])('reports %s', (_name, schema, problem) => {
    expect(portabilityProblems(schema)).toContain(problem);
  });
});
