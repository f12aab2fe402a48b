import { describe, expect, it } from 'vitest';
import { etagOf, noneMatch } from './etag.js';

describe('etagOf', () => {
  it('is a quoted tag of the bytes: the same body gives the same tag, another body another', () => {
    const tag = etagOf('{"a":1}');
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(etagOf('{"a":1}')).toBe(tag);
    expect(etagOf('{"a":2}')).not.toBe(tag);
  });
});

describe('noneMatch', () => {
  const tag = etagOf('{"a":1}');

  it('matches the tag itself, its weak form, a list holding it and *', () => {
    expect(noneMatch(tag, tag)).toBe(true);
    expect(noneMatch(`W/${tag}`, tag)).toBe(true);
    expect(noneMatch(`"other", ${tag}`, tag)).toBe(true);
    expect(noneMatch(`"other",W/${tag}`, tag)).toBe(true);
    expect(noneMatch('*', tag)).toBe(true);
  });

  it('does not match nothing, another tag or the tag unquoted', () => {
    expect(noneMatch(undefined, tag)).toBe(false);
    expect(noneMatch('', tag)).toBe(false);
    expect(noneMatch('"other"', tag)).toBe(false);
    expect(noneMatch(tag.slice(1, -1), tag)).toBe(false);
  });
});
