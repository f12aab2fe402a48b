import { describe, expect, it } from 'vitest';
import { emailLayout } from './email-layout.js';

describe('the email layout', () => {
  const email = emailLayout({
    language: 'en',
    subject: 'A <subject>',
    preheader: 'Seen in the inbox',
    branding: { accountName: 'Studio & Co', logoUrl: null, accentColor: '#0f766e' },
    greeting: 'Hello Ana,',
    blocks: [
      { kind: 'paragraph', text: 'First line\nsecond line' },
      { kind: 'note', title: 'What to change:', text: 'More <b>contrast</b>' },
      { kind: 'button', label: 'Open', url: 'https://app.example/p?a=1&b=2', hint: 'Or copy:' },
      {
        kind: 'list',
        heading: 'Still needed:',
        items: [{ text: 'Logo' }, { text: 'About', detail: 'Longer' }],
      },
    ],
    signature: ['Thanks,', 'Studio & Co'],
    footer: ['Personal link.'],
    footerLink: {
      label: 'Stop',
      url: 'https://app.example/optout',
      text: 'Stop here: https://app.example/optout',
    },
  });

  it('writes the plain text from the same blocks, in the same order', () => {
    expect(email.text).toBe(
      [
        'Hello Ana,',
        '',
        'First line\nsecond line',
        '',
        'What to change:',
        '> More <b>contrast</b>',
        '',
        'Open:',
        'https://app.example/p?a=1&b=2',
        '',
        'Still needed:',
        '- Logo',
        '- About: Longer',
        '',
        'Thanks,',
        'Studio & Co',
        '',
        '--',
        'Personal link.',
        'Stop here: https://app.example/optout',
      ].join('\n'),
    );
  });

  it('escapes every text, keeps line breaks, and puts the button in a coloured cell', () => {
    expect(email.html).toContain('<title>A &lt;subject&gt;</title>');
    expect(email.html).toContain('More &lt;b&gt;contrast&lt;/b&gt;');
    expect(email.html).toContain('First line<br>second line');
    expect(email.html).toContain('href="https://app.example/p?a=1&amp;b=2"');
    expect(email.html).toMatch(
      /<td\s+align="center"\s+bgcolor="#0f766e"[^>]*>\s*<a\s+href="https:\/\/app\.example\/p/,
    );
    expect(email.html).toContain('Studio &amp; Co');
    expect(email.html).toContain('Seen in the inbox');
    expect(email.html).not.toMatch(/<script|javascript:/i);
  });

  it('reuses a compiled shape with each email’s own content, never another’s', () => {
    const input = (name: string, note: string) => ({
      language: 'en',
      subject: `For ${name}`,
      branding: { accountName: 'Studio', logoUrl: null, accentColor: null },
      greeting: `Hello ${name},`,
      blocks: [
        { kind: 'note' as const, title: 'Change:', text: note },
        { kind: 'button' as const, label: 'Open', url: `https://app.example/${name}`, hint: 'Or copy:' },
      ],
      signature: ['Studio'],
      footer: ['Personal link.'],
    });
    const ana = emailLayout(input('Ana', 'More contrast'));
    // A sender's text that looks like a placeholder stays text.
    const ben = emailLayout(input('Ben', '@@slot-0@@'));
    expect(ben.html).toContain('Hello Ben,');
    expect(ben.html).toContain('href="https://app.example/Ben"');
    expect(ben.html).toContain('@@slot-0@@');
    expect(ben.html).not.toContain('Ana');
    expect(ana.html).toContain('More contrast');
    // Same shape, same markup around the content.
    expect(ben.html.replace(/Ben/g, 'Ana').replace('@@slot-0@@', 'More contrast')).toBe(ana.html);
  });
});
