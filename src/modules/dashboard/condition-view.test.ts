import { describe, expect, it } from 'vitest';
import { conditionReason } from './condition-view.js';

const words = { yes: 'Yes', no: 'No', or: 'or' };

describe('conditionReason', () => {
  it('names a yes/no answer in words', () => {
    expect(
      conditionReason(
        { item_key: 'has_logo', equals: true },
        { label: 'Do you have a logo?', type: 'boolean' },
        words,
      ),
    ).toEqual({ kind: 'equals', item: 'Do you have a logo?', value: 'Yes' });
  });

  it("names choices by their options' labels, several joined with or", () => {
    const source = {
      label: 'What the site needs',
      type: 'multiselect',
      options: [
        { value: 'shop', label: 'An online shop' },
        { value: 'blog', label: 'A blog' },
        { value: 'booking', label: 'Table booking' },
      ],
    };
    expect(conditionReason({ item_key: 'needs', in: ['shop', 'blog', 'booking'] }, source, words)).toEqual({
      kind: 'equals',
      item: 'What the site needs',
      value: 'An online shop, A blog or Table booking',
    });
  });

  it('quotes a text answer and says when any answer is enough', () => {
    expect(
      conditionReason({ item_key: 'city', equals: 'Oslo' }, { label: 'City', type: 'text' }, words),
    ).toEqual({ kind: 'equals', item: 'City', value: '“Oslo”' });
    expect(conditionReason({ item_key: 'city', answered: true }, undefined, words)).toEqual({
      kind: 'answered',
      item: 'city',
    });
  });
});
