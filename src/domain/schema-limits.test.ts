import { describe, expect, it } from 'vitest';
import {
  MAX_EXPANDED_NODES,
  MAX_VALUE_DEPTH,
  MAX_VALUE_NODES,
  schemaCostProblem,
  valueSizeProblem,
} from './schema-limits.js';

describe('schemaCostProblem', () => {
  it('accepts ordinary schemas', () => {
    expect(
      schemaCostProblem({
        type: 'object',
        properties: { tags: { type: 'array', items: { type: 'string' }, uniqueItems: true } },
        $defs: { a: { type: 'string' } },
        anyOf: [{ $ref: '#/$defs/a' }, { type: 'number' }],
      }),
    ).toBeUndefined();
  });

  it('measures a doubling $ref chain without walking it', () => {
    const defs: Record<string, unknown> = { l0: { type: 'string' } };
    for (let i = 1; i <= 200; i++)
      defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i - 1}` }, { $ref: `#/$defs/l${i - 1}` }] };
    expect(schemaCostProblem({ $defs: defs, $ref: '#/$defs/l200' })).toContain(`${MAX_EXPANDED_NODES}`);
  });

  it('refuses recursive references, deep schemas and unbounded uniqueItems over objects', () => {
    expect(
      schemaCostProblem({ $defs: { n: { properties: { next: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' }),
    ).toContain('recursive');
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { a: deep } };
    expect(schemaCostProblem(deep)).toContain('nested deeper');
    expect(schemaCostProblem({ type: 'array', uniqueItems: true })).toContain('maxItems');
    expect(schemaCostProblem({ type: 'array', uniqueItems: true, maxItems: 1000 })).toBeUndefined();
  });
});

describe('valueSizeProblem', () => {
  it('bounds depth and node count without recursion', () => {
    let value: unknown = 1;
    for (let i = 0; i < 100_000; i++) value = [value];
    expect(valueSizeProblem(value)).toContain(`${MAX_VALUE_DEPTH}`);
    expect(valueSizeProblem(Array.from({ length: MAX_VALUE_NODES }, () => 0))).toContain(
      `${MAX_VALUE_NODES}`,
    );
    expect(valueSizeProblem({ a: [1, 2, { b: 'c' }] })).toBeUndefined();
  });
});
