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
};

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
      }
    }
  });

  it('lists what is still needed, the due date, the revision note and the opt-out link', () => {
    const reminder = renderEmail('reminder', context);
    expect(reminder.subject).toBe('Reminder: Website & brand');
    expect(reminder.text).toContain('Items still needed: 2');
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
    expect(reminder.text).toContain('Items still needed: 1');
    expect(reminder.text).toContain(
      'Still needed:\n- Logo\n\nSaved, not yet sent:\n- Signed contract\n- A note\n',
    );
    expect(reminder.text).toContain('Open your page and press “Send” so Studio <Nord> receives them.');
    expect(reminder.html).toContain('<li>Signed contract</li>');
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
