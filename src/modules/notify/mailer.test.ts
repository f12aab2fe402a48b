import { describe, expect, it } from 'vitest';
import { textEncodingFor } from './mailer.js';

describe('textEncodingFor (the transfer encoding of an email, chosen as nodemailer would)', () => {
  it('picks quoted-printable for mostly Latin text, accents and HTML included', () => {
    expect(textEncodingFor('Bonjour Amélie, votre dossier attend.', '<p>Grüße</p>')).toBe('quoted-printable');
  });

  it('picks base64 when other characters outnumber Latin letters', () => {
    expect(textEncodingFor('日本語のテキストです', 'ok')).toBe('base64');
    expect(textEncodingFor('\u0001\u0002\u0003', '')).toBe('base64');
  });

  it('counts tabs and line breaks as neither', () => {
    expect(textEncodingFor('a\t\r\n', '')).toBe('quoted-printable');
    expect(textEncodingFor('', '')).toBe('base64');
  });
});
