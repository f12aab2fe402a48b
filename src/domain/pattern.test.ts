import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  UnsupportedPattern,
  compileLinearRegExp,
  compilePattern,
  matchesPattern,
  samplePatternValue,
  type CompiledPattern,
} from './pattern.js';

function compiled(source: string): CompiledPattern {
  const result = compilePattern(source);
  if (!result.ok) throw new Error(result.message);
  return result.pattern;
}

const native = (source: string, value: string) => new RegExp(`^(?:${source})$`, 'u').test(value);

describe('compilePattern', () => {
  it.each([
    ['(a)\\1', 'backreferences are not supported'],
    ['(?<x>a)\\k<x>', 'backreferences are not supported'],
    ['(?<x>a)b|\\k<x>', 'backreferences are not supported'],
    ['a(?=b)b', 'lookahead and lookbehind are not supported'],
    ['(?<!a)b', 'lookahead and lookbehind are not supported'],
  ])('refuses %s (needs backtracking)', (source, message) => {
    expect(compilePattern(source)).toEqual({ ok: false, message: `pattern: ${message}` });
  });

  it('refuses invalid syntax and oversized patterns', () => {
    expect(compilePattern('([a-z')).toEqual({
      ok: false,
      message: 'pattern is not a valid regular expression',
    });
    expect(compilePattern('a'.repeat(501)).ok).toBe(false);
    // RE2 refuses repetitions that would expand past 1,000, and JavaScript-only syntax.
    expect(compilePattern(`(a{100}){100}`)).toEqual({
      ok: false,
      message: 'pattern: the linear-time engine cannot run it (invalid repeat count: `{100}`)',
    });
    expect(compilePattern('\\p{Script=Greek}+').ok).toBe(false);
  });

  it('is the translation JSON Schemas use too: it throws what it refuses', () => {
    expect(() => compileLinearRegExp('a(?=b)')).toThrow(UnsupportedPattern);
    expect(() => compileLinearRegExp('(?<x>a)\\k<x>')).toThrow('backreferences are not supported');
    // Escaped or in a class, the same characters are literals.
    expect(compileLinearRegExp('\\(\\?=[(?=]').testExact('(?=(')).toBe(true);
  });
});

describe('matchesPattern', () => {
  const cases: [string, string, boolean][] = [
    ['[0-9]{3}', '123', true],
    ['[0-9]{3}', '1234', false],
    ['cat|dog', 'hotdog', false],
    ['cat|dog', 'dog', true],
    ['.', '😀', true],
    ['\\p{Lu}\\p{Ll}+', 'Élodie', true],
    ['[A-Z]{2}\\d{2}( ?\\d{4}){2,3}', 'DE44 1234 5678 90', false],
    ['[A-Z]{2}\\d{2}( ?\\d{4}){2,3}', 'DE44 1234 5678', true],
    ['(?<area>\\d{3})-\\d{4}', '555-1234', true],
    ['\\bfoo\\b.*', 'foo bar', true],
    ['a\\Bb', 'ab', true],
    ['^abc$', 'abc', true],
    ['(a*)*b', 'aaab', true],
    ['x{2,}', 'x', false],
    ['x{2,}', 'xxxx', true],
    ['\\u{1F600}|\\x41', 'A', true],
  ];
  it.each(cases)('%s on %s is %s', (source, value, expected) => {
    expect(matchesPattern(compiled(source), value)).toBe(expected);
    expect(native(source, value)).toBe(expected);
  });

  it('agrees with the native engine on generated values (fuzz)', () => {
    const sources = ['(a|ab)*c?', '[a-c]+b{1,3}', '(?:ab|a)(?:bc|c)?', 'a?b*c+', '(\\d+\\.)*\\d+'];
    fc.assert(
      fc.property(fc.constantFrom(...sources), fc.stringMatching(/^[a-d0-9.]{0,12}$/), (source, value) => {
        expect(matchesPattern(compiled(source), value)).toBe(native(source, value));
      }),
      { numRuns: 500 },
    );
  });

  it('takes linear steps on the classic catastrophic patterns', () => {
    // Each would take ages on a backtracking engine with this value; here the step count is bounded.
    for (const source of ['(a+)+$', '(a|a)*b', '(\\w+\\s?)*$', '(a|aa)+c']) {
      const value = `${'a'.repeat(4000)}!`;
      expect(matchesPattern(compiled(source), value)).toBe(false);
    }
  });
});

describe('samplePatternValue', () => {
  it.each(['[0-9]{3}', '[A-Z]{2}-\\d{4}', '\\w+@\\w+\\.com', 'cat|dog', '#?[0-9a-f]{6}'])(
    'finds a value %s accepts',
    (source) => {
      const value = samplePatternValue(compiled(source));
      expect(value).toBeDefined();
      expect(native(source, value ?? '')).toBe(true);
    },
  );

  it('gives up on a pattern its alphabet cannot satisfy', () => {
    expect(samplePatternValue(compiled('[\\u0100-\\u017F]+'))).toBeUndefined();
  });

  it('gives only values RE2 accepts, over many patterns', () => {
    const sources = [
      '[0-9]{3}',
      '\\d{5}',
      '[A-Z]{2}\\d{2}( ?\\d{4}){2,3}',
      '\\bfoo\\b.*',
      'a\\Bb',
      '(a|ab)*c?',
      '(?:ab|a)(?:bc|c)?',
      '(\\d+\\.)*\\d+',
      '\\w+@\\w+\\.(com|de)',
      '(?<area>\\d{3})-\\d{4}',
      '[^a-z]+',
      '\\p{Lu}\\p{Ll}+',
      '#?[0-9a-fA-F]{6}',
      '(a+)+$',
      '^\\s*x\\s*$',
      'x{2,}y?',
      '[\\w.-]+:[0-9]{2,4}',
      '\\x41\\u0042c',
    ];
    let found = 0;
    for (const source of sources) {
      const pattern = compiled(source);
      const value = samplePatternValue(pattern);
      if (value === undefined) continue;
      found++;
      expect(matchesPattern(pattern, value), `${source} gave ${value}`).toBe(true);
      expect(native(source, value)).toBe(true);
    }
    expect(found).toBeGreaterThanOrEqual(sources.length - 2);
  });
});
