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

  it('answers as a full count would, also when it stops counting early (long texts, in parts)', () => {
    // nodemailer's own count, per its two regular expressions, over the texts together.
    const reference = (...texts: string[]) => {
      const all = texts.join('');
      // eslint-disable-next-line no-control-regex -- nodemailer's own pattern: the reference
      const other = (all.match(/[\x00-\x08\x0B\x0C\x0E-\x1F\u0080-\uFFFF]/g) ?? []).length;
      const latin = (all.match(/[a-z]/gi) ?? []).length;
      return other < latin ? 'quoted-printable' : 'base64';
    };
    const pieces = ['a', 'Z', '日', 'é', ' ', '\n', '1', '\u0001', '<p>'];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const cases: string[][] = [
      // Decided late: the Latin letters lead until the last thousand characters.
      ['a'.repeat(3000) + '日'.repeat(2999), ''],
      ['a'.repeat(3000) + '日'.repeat(3000), ''],
      ['日'.repeat(2048), 'a'.repeat(2049)],
      ['a'.repeat(1024), '日'.repeat(5000)],
    ];
    for (let n = 0; n < 200; n++) {
      const part = () => {
        const length = Math.floor(random() * 6000);
        const bias = random();
        let text = '';
        while (text.length < length) {
          text += random() < bias ? 'a' : (pieces[Math.floor(random() * pieces.length)] ?? '');
        }
        return text;
      };
      cases.push([part(), part()]);
    }
    for (const texts of cases) expect(textEncodingFor(...texts)).toBe(reference(...texts));
  });
});
