import { describe, expect, it } from 'vitest';
import { answerView, humanKey, nationalPhone } from './answer-view.js';

const en = { lang: 'en', yes: 'Yes', no: 'No' };
const de = { lang: 'de', yes: 'Ja', no: 'Nein' };

describe('answers as people read them', () => {
  it('shows Yes/No in the reader’s language instead of true/false', () => {
    expect(answerView({ type: 'boolean' }, true, en)).toEqual({ kind: 'text', text: 'Yes', long: false });
    expect(answerView({ type: 'boolean' }, false, de)).toEqual({ kind: 'text', text: 'Nein', long: false });
  });

  it('shows option labels instead of their values', () => {
    const options = [
      { value: 'modern', label: 'Modern and clean' },
      { value: 'has_shop', label: 'We sell online' },
    ];
    expect(answerView({ type: 'select', options }, 'modern', en)).toMatchObject({ text: 'Modern and clean' });
    expect(answerView({ type: 'multiselect', options }, ['has_shop', 'gone'], en)).toEqual({
      kind: 'list',
      entries: ['We sell online', 'gone'],
    });
  });

  it('writes dates and numbers in the reader’s language', () => {
    expect(answerView({ type: 'date' }, '2027-02-01', en)).toMatchObject({ text: 'February 1, 2027' });
    expect(answerView({ type: 'date' }, '2027-02-01', de)).toMatchObject({ text: '1. Februar 2027' });
    expect(answerView({ type: 'number' }, 12500.5, de)).toMatchObject({ text: '12.500,5' });
  });

  it('gives colours as colours, phone numbers in national format, links as links', () => {
    expect(answerView({ type: 'color_list' }, ['#ff6600', '#003366'], en)).toEqual({
      kind: 'colours',
      colours: ['#ff6600', '#003366'],
    });
    expect(answerView({ type: 'phone' }, '+4915112345678', en)).toEqual({
      kind: 'link',
      href: 'tel:+4915112345678',
      text: '01511 2345678',
    });
    expect(nationalPhone('not a number')).toBe('not a number');
    expect(answerView({ type: 'url' }, 'javascript:alert(1)', en)).toMatchObject({ kind: 'text' });
    expect(answerView({ type: 'url' }, 'https://example.com', en)).toMatchObject({ kind: 'link' });
  });

  it('lists a structured answer by the schema’s field titles, nested ones joined, in schema order', () => {
    const schema = {
      type: 'object',
      properties: {
        company: { type: 'string', title: 'Company name' },
        founded: { type: 'string', format: 'date', title: 'Founded' },
        address: {
          type: 'object',
          title: 'Address',
          properties: { street: { type: 'string', title: 'Street' } },
        },
        vat_registered: { type: 'boolean' },
      },
    };
    const value = {
      vat_registered: true,
      address: { street: 'Hauptstraße 1' },
      company: 'Bäckerei Müller',
      founded: '1999-04-01',
      extra_key: 3,
    };
    expect(answerView({ type: 'structured', schema }, value, en)).toEqual({
      kind: 'fields',
      fields: [
        { label: 'Company name', value: 'Bäckerei Müller' },
        { label: 'Founded', value: 'April 1, 1999' },
        { label: 'Address › Street', value: 'Hauptstraße 1' },
        { label: 'Vat registered', value: 'Yes' },
        { label: 'Extra key', value: '3' },
      ],
    });
  });

  it('says an empty answer is empty', () => {
    expect(answerView({ type: 'text' }, '', en)).toEqual({ kind: 'empty' });
    expect(answerView({ type: 'multiselect' }, [], en)).toEqual({ kind: 'empty' });
    expect(humanKey('has_shop')).toBe('Has shop');
  });
});
