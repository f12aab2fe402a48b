import { describe, expect, it } from 'vitest';
import { UpdateIntakeBody, UpdateItemBody } from '../../intakes/editing.schemas.js';
import { emptyRow } from '../item-form.js';
import { itemPatchOf, settingsBodyOf } from './builder-edit.routes.js';
import { valuesOf } from './builder-values.js';

const form = (fields: Record<string, string>) => new URLSearchParams(Object.entries(fields));

describe("the builder's form state", () => {
  const cards = {
    'items[0][label]': 'Logo',
    'items[0][type]': 'image',
    'items[1][label]': '',
    'items[2][label]': 'About',
  };

  it('adds a card of the asked kind after the cards that say something', () => {
    const values = valuesOf(form({ ...cards, intent: 'add:file_list' }));
    expect(values.rows.map((r) => [r.label, r.type])).toEqual([
      ['Logo', 'image'],
      ['About', 'text'],
      ['', 'file_list'],
    ]);
    expect(values.added).toBe(2);
    expect(values.send).toBe(false);
  });

  it('removes the asked card and adds a field to the asked one', () => {
    expect(valuesOf(form({ ...cards, intent: 'remove:0' })).rows.map((r) => r.label)).toEqual(['', 'About']);
    const withField = valuesOf(form({ ...cards, intent: 'field:2', 'items[2][fields][0][label]': 'Name' }));
    expect(withField.rows[2]?.fields.map((f) => f.label)).toEqual(['Name', '']);
  });

  it('sends when asked to, or by the send box of a form without intent', () => {
    expect(valuesOf(form({ intent: 'send' })).send).toBe(true);
    expect(valuesOf(form({ intent: 'draft', send: 'on' })).send).toBe(false);
    expect(valuesOf(form({ send: 'on' })).send).toBe(true);
    expect(valuesOf(form({})).rows).toHaveLength(1);
  });
});

describe('the edit forms as PATCH bodies', () => {
  const current = {
    project_name: 'Website',
    due_date: '2099-01-01',
    chase_schedule: 'default',
    folder_id: null,
    client_name: 'Dana',
    client_phone: null,
    client_language: 'en',
  };
  const unchanged = {
    project_name: 'Website',
    due_date: '2099-01-01',
    chase_schedule: 'default',
    folder_id: '',
    client_name: 'Dana',
    client_phone: '',
    client_language: 'en',
  };

  it('sends only what changed, and null for what was emptied', () => {
    expect(settingsBodyOf(form(unchanged), current)).toEqual({});
    const body = settingsBodyOf(
      form({
        ...unchanged,
        due_date: '',
        client_name: '',
        client_phone: '+49 151 2345 6789',
        chase_schedule: 'gentle',
      }),
      current,
    );
    expect(body).toEqual({
      due_date: null,
      chase_schedule: 'gentle',
      client: { name: null, phone: '+4915123456789' },
    });
    expect(UpdateIntakeBody.safeParse(body).success).toBe(true);
  });

  it("replaces an item's whole definition, null where a field was emptied", () => {
    const patch = itemPatchOf({ ...emptyRow('text'), label: 'Tagline', text_format: 'digits' }, true);
    expect(patch).toEqual({
      type: 'text',
      label: 'Tagline',
      help: null,
      example: '123456',
      required: true,
      constraints: { pattern: '[0-9]+' },
      schema: null,
      options: null,
      discard_submitted_value: true,
    });
    expect(UpdateItemBody.safeParse(patch).success).toBe(true);
  });
});
