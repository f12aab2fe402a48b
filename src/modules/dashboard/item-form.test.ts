import { describe, expect, it } from 'vitest';
import { ItemDefinition } from '../../domain/items.js';
import {
  definitionOfRow,
  definitionsOfRows,
  emptyRow,
  keyFromLabel,
  rowOfDefinition,
  rowsOf,
  withItemLabels,
} from './item-form.js';
import { decisionValue } from './sections/decisions.js';

describe('the item rows of the dashboard forms', () => {
  it('reads posted rows in order and leaves out empty ones', () => {
    const form = new URLSearchParams([
      ['items[1][label]', 'Second'],
      ['items[0][label]', 'First'],
      ['items[0][required]', 'on'],
      ['items[2][label]', ''],
      ['items[2][key]', ''],
      ['unrelated', 'x'],
    ]);
    const rows = rowsOf(form);
    expect(rows.map((r) => [r.label, r.required])).toEqual([
      ['First', true],
      ['Second', false],
    ]);
  });

  it('turns a row into an item definition the API schema accepts', () => {
    const row = {
      ...emptyRow(),
      label: 'Team photos',
      type: 'file_list',
      formats: 'JPG, png',
      min_count: '2',
      max_count: '5',
      max_mb: '2.5',
    };
    const definition = definitionOfRow(row);
    expect(definition).toEqual({
      key: 'team_photos',
      label: 'Team photos',
      type: 'file_list',
      required: true,
      constraints: { formats: ['jpg', 'png'], min_count: 2, max_count: 5, max_bytes: 2_621_440 },
    });
    expect(ItemDefinition.safeParse(definition).success).toBe(true);
  });

  it('carries an example answer both ways', () => {
    const row = {
      ...emptyRow(),
      label: 'IBAN',
      example: ' DE89 3704 0044 0532 0130 00 ',
      pattern: '[A-Z]{2}.+',
    };
    const definition = definitionOfRow(row);
    expect(definition.example).toBe('DE89 3704 0044 0532 0130 00');
    const parsed = ItemDefinition.parse(definition);
    expect(rowOfDefinition(parsed).example).toBe('DE89 3704 0044 0532 0130 00');
    expect(definitionOfRow({ ...row, example: '' }).example).toBeUndefined();
  });

  it('keeps what is not a number as text, so the schema names the field', () => {
    const definition = definitionOfRow({ ...emptyRow(), label: 'Logo', type: 'image', min_width: 'wide' });
    expect(definition.constraints).toEqual({ min_width: 'wide' });
    const parsed = ItemDefinition.safeParse(definition);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(['constraints', 'min_width']);
  });

  it('reads choices, JSON Schemas and owner items', () => {
    const definition = definitionOfRow({
      ...emptyRow(),
      label: 'Plan',
      type: 'select',
      options: 'basic: Basic\nPro plan',
      assignee: 'owner',
    });
    expect(definition.options).toEqual([
      { value: 'basic', label: 'Basic' },
      { value: 'pro_plan', label: 'Pro plan' },
    ]);
    expect(definition.assignee).toBe('owner');
    const structured = definitionOfRow({
      ...emptyRow(),
      label: 'Facts',
      type: 'structured',
      schema: '{"type":"object"}',
    });
    expect(structured.schema).toEqual({ type: 'object' });
  });

  it('round-trips a stored definition through a row', () => {
    const stored = {
      key: 'logo',
      label: 'Logo',
      type: 'image',
      required: false,
      constraints: { formats: ['png'], min_width: 400, transparent_background: true, max_bytes: 1_048_576 },
    };
    expect(definitionOfRow(rowOfDefinition(stored))).toEqual(stored);
  });

  it('makes keys from labels', () => {
    expect(keyFromLabel('Your logo (SVG)')).toBe('your_logo_svg');
    expect(keyFromLabel('Café crème')).toBe('cafe_creme');
    expect(keyFromLabel('2024 report')).toBe('item_2024_report');
    expect(keyFromLabel('!!!')).toBe('item');
  });

  it('keeps only the constraints of the chosen kind, and numbers keys two labels share', () => {
    const rows = [
      { ...emptyRow('image'), label: 'Logo', max_chars: '40', formats: 'png', options: 'a\nb' },
      { ...emptyRow('text'), label: 'Logo', min_width: '100', text_format: 'digits' },
    ];
    const [image, text] = definitionsOfRows(rows, ['logo_2']);
    expect(image).toMatchObject({ key: 'logo', constraints: { formats: ['png'] } });
    expect(image).not.toHaveProperty('options');
    expect(text).toMatchObject({ key: 'logo_3', constraints: { pattern: '[0-9]+' }, example: '123456' });
  });

  it('names items by their labels in problem messages', () => {
    const items = [
      { key: 'logo', label: 'Your logo' },
      { key: 'x', label: '' },
    ];
    expect(withItemLabels('items.logo.constraints.formats: bad; items.x.key: odd', items)).toBe(
      '“Your logo” constraints.formats: bad; items.x.key: odd',
    );
    expect(withItemLabels('items.0.label: Too small', items)).toBe('“Your logo” label: Too small');
  });

  it('types a decision typed into one field by the item type', () => {
    expect(decisionValue('number', ' 42 ')).toBe(42);
    expect(decisionValue('boolean', 'yes')).toBe(true);
    expect(decisionValue('multiselect', 'a, b')).toEqual(['a', 'b']);
    expect(decisionValue('multiselect', '["a"]')).toEqual(['a']);
    expect(decisionValue('text', ' keep spaces ')).toBe(' keep spaces ');
  });
});
