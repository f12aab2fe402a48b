import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { quotedPrintable, quotedPrintablePart } from './quoted-printable.js';

/** The text a reader gets back from the encoded part, decoded by mailparser (an independent decoder). */
async function decoded(text: string): Promise<string> {
  const parsed = await simpleParser(quotedPrintablePart('text/plain; charset=utf-8', text));
  return parsed.text ?? '';
}

/** What must hold of any output, whatever the text: RFC 2045 §6.7's rules, and ours. */
function expectWellFormed(encoded: string, what: string): void {
  const lines = encoded.split('\r\n');
  for (const line of lines) {
    expect(line.length, `${what}: ${line}`).toBeLessThanOrEqual(76);
    // Printable ASCII, spaces and tabs only; no bare CR or LF.
    expect(line, what).toMatch(/^[\x20-\x7e\t]*$/);
    // No white space at a line's end: a relay may trim it.
    expect(line, what).not.toMatch(/[ \t]$/);
    // Every `=` starts an escape of two upper-case hex digits, or ends the line (a soft break).
    expect(line.replace(/=[0-9A-F]{2}/g, '').replace(/=$/, ''), what).not.toContain('=');
    // A line never starts with the continuation bytes of a UTF-8 character begun on the line before.
    expect(line, what).not.toMatch(/^=[89AB][0-9A-F]/);
  }
}

/** A fixed sequence of pseudo-random numbers in [0, 1), so a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state / 2 ** 32;
  };
}

/** Pieces a text is made of: words, every kind of break and white space, escapes, 2-, 3- and 4-byte characters. */
const PIECES = [
  'word',
  'Hello',
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '\r',
  '=',
  '==3D',
  '.',
  'é',
  'Grüße',
  '—',
  '“quoted”',
  '漢字',
  '😀',
  '\u0000',
  '\u007f',
  'x'.repeat(70),
  '<td style="padding:12px 24px;font-family:Helvetica,Arial,sans-serif">',
];

describe('quotedPrintable', () => {
  it('encodes what must be encoded and leaves printable ASCII as it is', () => {
    expect(quotedPrintable('Hello, world! <a href="x">ok</a>')).toBe('Hello, world! <a href=3D"x">ok</a>');
    expect(quotedPrintable('Grüße')).toBe('Gr=C3=BC=C3=9Fe');
    expect(quotedPrintable('😀')).toBe('=F0=9F=98=80');
    expect(quotedPrintable('a\u0000b\u007fc')).toBe('a=00b=7Fc');
    expect(quotedPrintable('')).toBe('');
  });

  it('writes every line break as CRLF and encodes a lone carriage return', () => {
    expect(quotedPrintable('one\ntwo\r\nthree\rfour')).toBe('one\r\ntwo\r\nthree=0Dfour');
  });

  it('encodes a space or tab at the end of a line, and only there', () => {
    expect(quotedPrintable('end \nnext\t\r\nlast ')).toBe('end=20\r\nnext=09\r\nlast=20');
    expect(quotedPrintable('a b\tc')).toBe('a b\tc');
  });

  it('breaks long lines softly at 76 characters, never inside an escape or a character', () => {
    expect(quotedPrintable('x'.repeat(80))).toBe(`${'x'.repeat(75)}=\r\n${'x'.repeat(5)}`);
    // The escape that would cross column 75 moves to the next line whole.
    expect(quotedPrintable(`${'x'.repeat(74)}=`)).toBe(`${'x'.repeat(74)}=\r\n=3D`);
    // So do all four escapes of an emoji.
    expect(quotedPrintable(`${'x'.repeat(70)}😀`)).toBe(`${'x'.repeat(70)}=\r\n=F0=9F=98=80`);
  });

  it('gives back the text through an independent decoder, and well-formed lines, for 400 mixed texts', async () => {
    const random = seeded(2026);
    for (let sample = 0; sample < 400; sample++) {
      const pieces = Math.floor(random() * 60);
      let text = '';
      for (let p = 0; p < pieces; p++) text += PIECES[Math.floor(random() * PIECES.length)];
      const encoded = quotedPrintable(text);
      const what = `sample ${sample}: ${JSON.stringify(text)}`;
      expectWellFormed(encoded, what);
      // On the wire every line break is CRLF; a reader gets LF.
      expect(await decoded(text), what).toBe(text.replace(/\r\n/g, '\n'));
    }
  });
});
