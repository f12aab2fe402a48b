import { describe, expect, it } from 'vitest';
import {
  cachedSchemaCount,
  compileJsonSchema,
  SCHEMA_CACHE_ENTRIES,
  validateJsonSchema,
} from './json-schema.js';

describe('structured-item schemas', () => {
  it('match patterns in linear time (40 a and ! against ^(a+)+$ never finishes on a backtracking engine)', () => {
    const schema = { type: 'string', pattern: '^(a+)+$' };
    expect(validateJsonSchema(schema, `${'a'.repeat(40)}!`)).toContain('must match pattern');
    expect(validateJsonSchema(schema, 'aaa')).toBeUndefined();
    // JavaScript syntax still means what it says.
    expect(validateJsonSchema({ type: 'string', pattern: '^\\p{Lu}\\u00e9$' }, 'Éé')).toBeUndefined();
  });

  it('refuse lookaround and backreferences at definition', () => {
    expect(compileJsonSchema({ type: 'string', pattern: '^(?=a)' })).toBeDefined();
  });

  it('keep a bounded number of compiled schemas', () => {
    for (let i = 0; i < SCHEMA_CACHE_ENTRIES + 50; i++) {
      expect(
        compileJsonSchema({ type: 'object', properties: { [`f${i}`]: { type: 'string' } } }),
      ).toBeUndefined();
    }
    expect(cachedSchemaCount()).toBe(SCHEMA_CACHE_ENTRIES);
  });
});

describe('patterns of several schemas', () => {
  it('are each their own', () => {
    expect(validateJsonSchema({ type: 'string', pattern: '^x$' }, 'x')).toBeUndefined();
    expect(validateJsonSchema({ type: 'string', pattern: '^y$' }, 'y')).toBeUndefined();
    expect(validateJsonSchema({ type: 'string', pattern: '^y$' }, 'x')).toBeDefined();
  });
});
