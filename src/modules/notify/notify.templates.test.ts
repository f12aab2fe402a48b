import { describe, expect, it } from 'vitest';
import { EMAIL_TEMPLATES, renderEmail, renderSmsReminder, type MessageContext } from './notify.templates.js';

const context: MessageContext = {
  language: 'en',
  accountName: 'Studio <Nord>',
  projectName: 'Website & brand',
  clientName: 'Dana',
  portalUrl: 'https://app.example/portal/in_abc',
  optOutUrl: 'https://app.example/optout/in_abc?sig=1',
  dueDate: '2026-12-15',
  outstanding: [
    { label: 'Logo', required: true, note: null, owed: true },
    { label: 'About', required: true, note: 'Add your founding year', owed: true },
    { label: 'Website', required: false, note: null, owed: false },
  ],
  revision: { itemLabel: 'About', note: 'Add your founding year' },
  branding: { logoUrl: null, accentColor: null },
};

const count = (haystack: string, needle: string) => haystack.split(needle).length - 1;

describe('email templates', () => {
  it('renders every template in every language, text and HTML with the same facts', () => {
    for (const language of ['en', 'fr', 'de', 'es', 'nl']) {
      for (const template of EMAIL_TEMPLATES) {
        const email = renderEmail(template, { ...context, language });
        expect(email.subject, `${language} ${template}`).not.toMatch(/\{\{|\.subject$/);
        expect(email.text).toContain(context.portalUrl);
        expect(email.html).toContain(context.portalUrl);
        expect(email.html).not.toContain('Studio <Nord>');
        expect(email.html).toContain('Studio &lt;Nord&gt;');
        // The button comes before the list of what is still needed.
        const button = email.html.indexOf(`href="${context.portalUrl}"`);
        expect(button).toBeGreaterThan(0);
        const list = email.html.indexOf('<ul');
        if (list >= 0) expect(button).toBeLessThan(list);
        const textList = email.text.indexOf('- Logo');
        if (textList >= 0) expect(email.text.indexOf(context.portalUrl)).toBeLessThan(textList);
        // Nothing left untranslated or uninterpolated.
        expect(email.text).not.toMatch(/\{\{|\b(intro|subject|portal_hint|revision_note_title)\b/);
      }
    }
  });

  it('says the revision note once, in text and HTML, and still lists that item', () => {
    for (const language of ['en', 'fr', 'de', 'es', 'nl']) {
      const email = renderEmail('revision', { ...context, language });
      expect(count(email.text, 'Add your founding year'), language).toBe(1);
      expect(count(email.html, 'Add your founding year'), language).toBe(1);
      expect(email.text).toMatch(/\n- About\n/);
    }
    const en = renderEmail('revision', context);
    expect(en.text).toContain('What to change in “About”:\n> Add your founding year\n');
    // Another item's note is still shown next to it.
    const other = renderEmail('revision', {
      ...context,
      revision: { itemLabel: 'Logo', note: 'Bigger, please' },
    });
    expect(other.text).toContain('- About: Add your founding year');
    expect(count(other.text, 'Bigger, please')).toBe(1);
  });

  it("uses the account's logo and accent colour, kept readable under white text", () => {
    const plain = renderEmail('invitation', context);
    expect(plain.html).not.toContain('<img');
    expect(plain.html).toContain('bgcolor="#2450c8"');
    const branded = renderEmail('invitation', {
      ...context,
      branding: { logoUrl: 'https://app.example/portal/brand/acct_1/logo?v=abc', accentColor: '#0F766E' },
    });
    expect(branded.html).toContain(
      '<img src="https://app.example/portal/brand/acct_1/logo?v=abc" alt="Studio &lt;Nord&gt;"',
    );
    expect(branded.html).toContain('bgcolor="#0f766e"');
    // A pale accent is darkened until white text reads on it (WCAG AA).
    const pale = renderEmail('invitation', {
      ...context,
      branding: { logoUrl: null, accentColor: '#ffe066' },
    });
    expect(pale.html).not.toContain('#ffe066');
    expect(pale.html).toMatch(/bgcolor="#[0-9a-f]{6}"/);
  });

  it('lists what is still needed, the due date, the revision note and the opt-out link', () => {
    const reminder = renderEmail('reminder', context);
    expect(reminder.subject).toBe('Reminder: Website & brand');
    // The list says what is needed; a count before it only repeated it.
    expect(reminder.text).not.toContain('Items still needed');
    expect(reminder.text).toContain('- Logo');
    expect(reminder.text).toContain('- About: Add your founding year');
    expect(reminder.text).toContain('- Website (optional)');
    expect(reminder.text).toContain('Please send everything by December 15, 2026.');
    expect(reminder.text).toContain(context.optOutUrl);
    const revision = renderEmail('revision', { ...context, optOutUrl: null });
    expect(revision.subject).toBe('Please revise “About” for Website & brand');
    expect(revision.text).not.toContain('optout');
    const thanks = renderEmail('completed', context);
    expect(thanks.text).not.toContain('Still needed');
    expect(renderEmail('invitation', { ...context, language: 'de' }).text).toContain('15. Dezember 2026');
  });

  it('lists saved answers the client has not sent as "saved, not yet sent", not as missing', () => {
    const reminder = renderEmail('reminder', {
      ...context,
      outstanding: [
        { label: 'Logo', required: true, note: null, owed: true },
        { label: 'Signed contract', required: true, note: null, owed: true, saved: true },
        { label: 'A note', required: false, note: null, owed: false, saved: true },
      ],
    });
    expect(reminder.text).toContain(
      'Still needed:\n- Logo\n\nSaved, not yet sent:\n- Signed contract\n- A note\n',
    );
    expect(reminder.text).toContain('Open your page and press “Send” so Studio <Nord> receives them.');
    expect(reminder.html).toContain('<li style="margin:0 0 6px">Signed contract</li>');
    expect(reminder.html).toContain('Saved, not yet sent:');
  });

  it('keeps the SMS short, with the link', () => {
    const text = renderSmsReminder(context);
    expect(text).toBe(
      'Studio <Nord>: reminder for Website & brand. Items still needed: 2. https://app.example/portal/in_abc',
    );
    const withSaved = renderSmsReminder({
      ...context,
      outstanding: [
        { label: 'Logo', required: true, note: null, owed: true },
        { label: 'About', required: true, note: null, owed: true, saved: true },
      ],
    });
    expect(withSaved).toBe(
      'Studio <Nord>: reminder for Website & brand. Items still needed: 1; saved but not sent yet: 1 (press Send). https://app.example/portal/in_abc',
    );
  });
});
