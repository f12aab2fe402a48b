import { describe, expect, it } from 'vitest';
import { resultsSummary, statusSummary, type StatusLike } from './mcp.summaries.js';

const status: StatusLike = {
  status: 'sent',
  client_last_seen: null,
  progress: { submitted: 0, total: 2, outstanding: 2, percent: 0 },
  items: [
    { key: 'logo', status: 'pending' },
    { key: 'about', status: 'pending' },
  ],
  chases: [
    { channel: 'email', status: 'bounced', sent_at: '2026-03-01T10:00:00.000Z' },
    { channel: 'email', status: 'scheduled', sent_at: null },
  ],
  recipients: [
    { email: 'dana@example.com', role: 'client', suppressed: true, opted_out_at: null, stalled_at: null },
  ],
};

describe('statusSummary', () => {
  it('says that the client cannot be reached, and what to do', () => {
    const text = statusSummary('in_1', status);
    expect(text).toContain('1 reminder bounced');
    expect(text).toContain('dana@example.com (client) is suppressed');
    expect(text).toContain('manage_recipients action reinstate');
    expect(text).toContain('send_chase with channel sms');
    expect(text).toContain('An email reminder is scheduled.');
  });

  it('does not list open decisions among the client items, and says who decides them', () => {
    const text = statusSummary('in_1', {
      ...status,
      recipients: [],
      items: [
        { key: 'about', status: 'pending', assignee: 'client' },
        { key: 'budget_ok', status: 'pending', assignee: 'owner' },
      ],
    });
    expect(text).toContain('Items: pending: about.');
    expect(text).toContain('Open decisions for the account');
    expect(text).toContain('budget_ok');
  });

  it('uses the right article for sms', () => {
    const text = statusSummary('in_1', {
      ...status,
      chases: [{ channel: 'sms', status: 'scheduled', sent_at: null }],
      recipients: [],
    });
    expect(text).toContain('An sms reminder is scheduled.');
    expect(text).not.toContain('suppressed');
  });
});

describe('resultsSummary', () => {
  const base = { intake_id: 'in_1', status: 'in_progress' };

  it('mentions file link expiry only when there are files', () => {
    const texts = resultsSummary({
      ...base,
      items: [{ key: 'about', type: 'text', status: 'approved', value: 'Hello' }],
    });
    expect(texts).not.toContain('expire');
    const files = resultsSummary({
      ...base,
      items: [{ key: 'logo', type: 'image', status: 'approved', value: { files: [{ file_id: 'f' }] } }],
    });
    expect(files).toContain('File URLs expire 24 hours from now');
  });

  it("names an open decision's proposal", () => {
    const text = resultsSummary({
      ...base,
      items: [
        { key: 'plan', type: 'select', status: 'pending', value: null, proposed: { value: 'phases' } },
        { key: 'ok', type: 'boolean', status: 'pending', value: null, proposed: null },
      ],
    });
    expect(text).toContain('Decision plan is open, with the proposal "phases"');
    expect(text).toContain('Decision ok is open, without a proposal');
  });

  it('points at client comments that wait for an answer', () => {
    const text = resultsSummary({
      ...base,
      items: [
        { key: 'logo', type: 'image', status: 'submitted', value: null, comments: [{ author: 'client' }] },
        {
          key: 'name',
          type: 'text',
          status: 'approved',
          value: 'Harbour',
          comments: [{ author: 'client' }, { author: 'owner' }],
        },
      ],
    });
    expect(text).toContain("The client's comment on logo has no answer yet");
    expect(text).not.toContain('on name');
  });

  it('says "store it now" when a secret is revealed, and why one is withheld', () => {
    expect(
      resultsSummary({ ...base, items: [{ key: 'pw', type: 'secret', status: 'submitted', value: 'x' }] }),
    ).toContain('store it now');
    const withheld = resultsSummary({
      ...base,
      items: [
        { key: 'pw', type: 'secret', status: 'submitted', value: null, withheld: 'secrets:read' },
        { key: 'ftp', type: 'secret', status: 'approved', value: null, withheld: 'revealed' },
      ],
    });
    expect(withheld).toContain('Secret pw withheld: this key lacks the secrets:read scope');
    expect(withheld).toContain('Secret ftp withheld: it was revealed once already');
    expect(withheld).not.toContain('store it now');
  });
});
