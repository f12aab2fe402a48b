import { describe, expect, it } from 'vitest';
import type { ShowIf } from './conditions.js';
import {
  applicableKeys,
  conditionHolds,
  conditionProblems,
  sectionGroups,
  type ConditionalDefinition,
} from './conditions.js';

const yesNo = { key: 'has_logo', type: 'boolean' };
const plan = { key: 'plan', type: 'select', options: [{ value: 'basic' }, { value: 'pro' }] };
const extras = { key: 'extras', type: 'multiselect', options: [{ value: 'seo' }, { value: 'shop' }] };

describe('conditionHolds', () => {
  it('equals: the answer itself, or one of a multiselect’s choices', () => {
    expect(conditionHolds({ item_key: 'a', equals: true }, true)).toBe(true);
    expect(conditionHolds({ item_key: 'a', equals: true }, false)).toBe(false);
    expect(conditionHolds({ item_key: 'a', equals: 'pro' }, 'pro')).toBe(true);
    expect(conditionHolds({ item_key: 'a', equals: 'pro' }, ' pro ')).toBe(true);
    expect(conditionHolds({ item_key: 'a', equals: 'shop' }, ['seo', 'shop'])).toBe(true);
    expect(conditionHolds({ item_key: 'a', equals: 'shop' }, ['seo'])).toBe(false);
  });

  it('in: one of the listed values; a multiselect when any chosen value is listed', () => {
    expect(conditionHolds({ item_key: 'a', in: ['basic', 'pro'] }, 'pro')).toBe(true);
    expect(conditionHolds({ item_key: 'a', in: ['basic'] }, 'pro')).toBe(false);
    expect(conditionHolds({ item_key: 'a', in: ['shop'] }, ['seo', 'shop'])).toBe(true);
  });

  it('answered: any non-empty answer; no answer satisfies no condition', () => {
    expect(conditionHolds({ item_key: 'a', answered: true }, 'x')).toBe(true);
    expect(conditionHolds({ item_key: 'a', answered: true }, false)).toBe(true);
    for (const empty of [undefined, null, '', '  ', []]) {
      expect(conditionHolds({ item_key: 'a', answered: true }, empty)).toBe(false);
      expect(conditionHolds({ item_key: 'a', equals: false }, empty)).toBe(false);
    }
  });
});

describe('applicableKeys', () => {
  const items = (logo: unknown, plan: unknown = undefined) => [
    { key: 'has_logo', value: logo },
    { key: 'logo', show_if: { item_key: 'has_logo', equals: true }, value: undefined },
    { key: 'logo_notes', show_if: { item_key: 'logo', answered: true as const }, value: 'x' },
    { key: 'plan', value: plan },
    { key: 'shop_url', show_if: { item_key: 'plan', in: ['pro'] }, value: undefined },
  ];

  it('hides an item whose condition does not hold, and applies it again when the answer changes', () => {
    expect([...applicableKeys(items(false))]).toEqual(['has_logo', 'plan']);
    expect([...applicableKeys(items(true, 'pro'))]).toEqual(['has_logo', 'logo', 'plan', 'shop_url']);
  });

  it('hides what depends on a hidden item, whatever its own answer says', () => {
    const keys = applicableKeys([
      { key: 'has_logo', value: false },
      { key: 'logo_text', show_if: { item_key: 'has_logo', equals: true }, value: 'ACME' },
      { key: 'font', show_if: { item_key: 'logo_text', answered: true }, value: undefined },
    ]);
    expect([...keys]).toEqual(['has_logo']);
  });

  it('never hides an item whose condition names no earlier item (refused when defined)', () => {
    const keys = applicableKeys([
      { key: 'a', show_if: { item_key: 'b', equals: 'x' }, value: undefined },
      { key: 'b', value: 'y' },
    ]);
    expect([...keys]).toEqual(['a', 'b']);
  });
});

describe('sectionGroups', () => {
  it('groups consecutive items of one section, keeping the order', () => {
    const groups = sectionGroups([
      { key: 'a', section: 'Brand' },
      { key: 'b', section: 'Brand' },
      { key: 'c' },
      { key: 'd', section: 'Access' },
      { key: 'e', section: 'Brand' },
    ]);
    expect(groups.map((g) => [g.section, g.items.map((i) => i.key)])).toEqual([
      ['Brand', ['a', 'b']],
      [null, ['c']],
      ['Access', ['d']],
      ['Brand', ['e']],
    ]);
  });
});

describe('conditionProblems', () => {
  const withIf = (key: string, show_if: ShowIf, type = 'text'): ConditionalDefinition => ({
    key,
    type,
    show_if,
  });

  it('accepts conditions on earlier select, multiselect, boolean and text items', () => {
    expect(
      conditionProblems([
        yesNo,
        plan,
        extras,
        { key: 'company', type: 'text' },
        withIf('logo', { item_key: 'has_logo', equals: false }, 'image'),
        withIf('shop', { item_key: 'plan', in: ['pro'] }),
        withIf('seo', { item_key: 'extras', equals: 'seo' }),
        withIf('vat', { item_key: 'company', answered: true }),
      ]),
    ).toEqual([]);
  });

  it('refuses an unknown item, naming the item that refers to it', () => {
    expect(conditionProblems([withIf('logo', { item_key: 'nope', equals: true })])).toEqual([
      { item: 'logo', field: 'show_if.item_key', message: 'refers to unknown item "nope"' },
    ]);
  });

  it('refuses a later item', () => {
    const [problem] = conditionProblems([withIf('logo', { item_key: 'has_logo', equals: true }), yesNo]);
    expect(problem).toMatchObject({ item: 'logo', field: 'show_if.item_key' });
    expect(problem?.message).toContain('comes later');
  });

  it('refuses a cycle, including an item that depends on itself', () => {
    const problems = conditionProblems([
      withIf('a', { item_key: 'b', answered: true }),
      withIf('b', { item_key: 'a', answered: true }),
      withIf('c', { item_key: 'c', answered: true }),
    ]);
    expect(problems.map((p) => p.item)).toEqual(['a', 'b', 'c']);
    for (const p of problems) expect(p.message).toContain('cycle');
  });

  it('refuses none or several tests, a kind without a comparable answer, and values the item cannot have', () => {
    const problems = conditionProblems([
      yesNo,
      plan,
      { key: 'brand', type: 'file' },
      withIf('x1', { item_key: 'has_logo' }),
      withIf('x2', { item_key: 'has_logo', equals: true, answered: true }),
      withIf('x3', { item_key: 'brand', answered: true }),
      withIf('x4', { item_key: 'has_logo', equals: 'yes' }),
      withIf('x5', { item_key: 'plan', in: ['gold'] }),
      withIf('x6', { item_key: 'plan', equals: true }),
    ]);
    expect(problems.map((p) => [p.item, p.field])).toEqual([
      ['x1', 'show_if.equals'],
      ['x2', 'show_if.equals'],
      ['x3', 'show_if.item_key'],
      ['x4', 'show_if.equals'],
      ['x5', 'show_if.in'],
      ['x6', 'show_if.equals'],
    ]);
    expect(problems[4]?.message).toBe('"plan" has no option "gold"');
  });
});
