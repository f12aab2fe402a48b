import { describe, expect, it } from 'vitest';
import { summarize, type Notice } from '../../domain/owner-notices.js';
import { SUPPORTED_LANGUAGES } from '../../i18n/index.js';
import { digestEmail, intakeNoticeEmail, type IntakeFacts, type OwnerFacts } from './notices.templates.js';

const owner = (language: string, livemode = true): OwnerFacts => ({
  language,
  accountName: 'Studio <Nord>',
  email: 'owner@example.com',
  livemode,
  settingsUrl: 'https://app.example.com/dashboard/settings#notifications',
});

const intake: IntakeFacts = {
  projectName: 'Harbour & <b>relaunch</b>',
  client: 'Dana',
  labelOf: (key) => ({ logo: 'Your logo', copy: 'About "us"' })[key] ?? key,
  dashboardUrl: 'https://app.example.com/dashboard/intakes/in_1',
};

const at = '2027-01-01T10:00:00.000Z';
const every: Notice[] = [
  { type: 'item.submitted', data: { item_key: 'logo' }, occurredAt: at },
  { type: 'item.submitted', data: { item_key: 'copy' }, occurredAt: at },
  { type: 'intake.completed', data: {}, occurredAt: at },
  { type: 'chase.bounced', data: { address: 'dana@example.com' }, occurredAt: at },
  { type: 'intake.stalled', data: { missing_items: [] }, occurredAt: at },
  { type: 'intake.overdue', data: { due_date: '2026-12-31', missing_items: ['logo'] }, occurredAt: at },
  { type: 'chase.opted_out', data: { address: 'dana@example.com' }, occurredAt: at },
];

describe('owner emails', () => {
  it('name the items by label, escape what people typed, and link to the intake', () => {
    const email = intakeNoticeEmail(owner('en'), intake, summarize(every.slice(0, 2)));
    expect(email.subject).toBe('New answers from Dana: Harbour & <b>relaunch</b>');
    expect(email.text).toContain('- Your logo\n- About "us"\n');
    expect(email.html).toContain(
      '<li style="overflow-wrap:anywhere;word-break:break-word">About &quot;us&quot;</li>',
    );
    expect(email.html).toContain('Harbour &amp; &lt;b&gt;relaunch&lt;/b&gt;');
    expect(email.html).not.toContain('<b>relaunch');
    expect(email.html).toContain('href="https://app.example.com/dashboard/intakes/in_1"');
    expect(email.html).toContain('Studio &lt;Nord&gt;');
  });

  it('are complete in every language: no key left untranslated, the test tag in test mode', () => {
    for (const language of SUPPORTED_LANGUAGES) {
      const one = intakeNoticeEmail(owner(language, false), intake, summarize(every));
      const digest = digestEmail(owner(language), '1 January 2027', [{ intake, summary: summarize(every) }]);
      for (const email of [one, digest]) {
        expect(`${email.subject}\n${email.text}`, language).not.toMatch(/owner_notice\.|\{\{/);
        expect(email.html).toContain(`<html lang="${language}">`);
      }
      expect(one.subject).toMatch(/^\[[^\]]+\] /);
      expect(one.text).toContain('dana@example.com');
    }
  });
});
