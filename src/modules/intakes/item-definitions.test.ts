import { describe, expect, it } from 'vitest';
import { definitionOf } from './intakes.repository.js';

const definition = (label: string, padding = 0) =>
  JSON.stringify({
    key: 'logo',
    type: 'file',
    label,
    help: 'x'.repeat(padding),
    constraints: { accept: ['image/png', 'image/svg+xml'], max_files: 2 },
  });

describe('item definitions from their stored text', () => {
  it('gives the same definition, frozen all the way down, for the same text', () => {
    const text = definition('Your logo');
    const first = definitionOf(text);
    // A text equal to the first but another string, as the next read's row holds it.
    const again = definitionOf(`${text.slice(0, 10)}${text.slice(10)}`);
    expect(again).toBe(first);
    expect(first).toMatchObject({ key: 'logo', label: 'Your logo', constraints: { max_files: 2 } });
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.constraints)).toBe(true);
    expect(Object.isFrozen((first.constraints as { accept: string[] }).accept)).toBe(true);
    expect(() => {
      (first as { label: string }).label = 'changed';
    }).toThrow(TypeError);
  });

  it('gives a changed text its own definition', () => {
    expect(definitionOf(definition('Your logo')).label).toBe('Your logo');
    expect(definitionOf(definition('Your new logo')).label).toBe('Your new logo');
  });

  it('keeps no text over 16 KB, and at most 2,000 texts', () => {
    const long = definition('Long', 20_000);
    expect(definitionOf(long)).not.toBe(definitionOf(long));
    expect(Object.isFrozen(definitionOf(long))).toBe(true);

    const first = definitionOf(definition('Kept first'));
    for (let n = 0; n < 2_000; n++) definitionOf(definition(`Label ${n}`));
    // The map was emptied when full: the first text is parsed anew, equal but not the same object.
    const later = definitionOf(definition('Kept first'));
    expect(later).toEqual(first);
    expect(later).not.toBe(first);
  });
});
