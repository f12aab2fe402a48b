import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpMailer, type OutgoingEmail } from '../src/modules/notify/mailer.js';
import { startSmtpServer } from './helpers/mail.js';

/**
 * The text and HTML parts of an email as a real SMTP server receives them (src/modules/notify/mailer.ts):
 * quoted-printable parts encoded by the service itself, base64 ones by nodemailer, and either way a
 * multipart/alternative that a mail reader (mailparser) reads back to the very texts sent.
 */

function email(to: string, text: string, html: string): OutgoingEmail {
  return {
    messageId: `msg_parts_${Math.random().toString(36).slice(2)}`,
    from: { name: 'Agence Dupré', address: 'reminders@example.test' },
    to,
    subject: 'Still needed: your logo',
    text,
    html,
  };
}

/** The headers of each part of a multipart message, in order. */
function partHeaders(raw: string): string[] {
  const boundary = /boundary="?([^";\r\n]+)"?/.exec(raw)?.[1];
  if (!boundary) return [];
  return raw
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => part.split('\r\n\r\n')[0] ?? '');
}

describe('the parts of an email over SMTP', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let mailer: SmtpMailer;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    mailer = new SmtpMailer(smtp.url);
  });
  afterAll(async () => {
    mailer.close();
    await smtp.close();
  });

  it('sends mostly Latin texts as quoted-printable parts that read back as sent', async () => {
    const line = 'Bonjour Hélène, il nous manque encore votre logo = la version vectorielle — merci ! ';
    const text = `${line.repeat(4)}\n\n.une ligne qui commence par un point\nfin avec espace \n😀 漢字`;
    const html = `<p style="font-family:Helvetica,Arial,sans-serif">${line.repeat(6)}</p>\n<p>😀 漢字</p>`;
    await mailer.send(email('qp@example.com', text, html));
    const [mail] = await smtp.waitFor('qp@example.com');
    expect(mail?.raw).toMatch(/Content-Type: multipart\/alternative/);
    const parts = partHeaders(mail?.raw ?? '');
    expect(parts).toHaveLength(2);
    expect(parts[0]).toContain('Content-Type: text/plain; charset=utf-8');
    expect(parts[1]).toContain('Content-Type: text/html; charset=utf-8');
    for (const part of parts) expect(part).toContain('Content-Transfer-Encoding: quoted-printable');
    expect(mail?.parsed.text).toBe(text);
    expect(mail?.parsed.html).toBe(html);
  });

  it('leaves texts mostly in other scripts to base64, which read back as sent', async () => {
    const text = '您好，我们仍然需要您的标志和品牌颜色。请在这里上传。'.repeat(8);
    const html = `<p>${text}</p>`;
    await mailer.send(email('base64@example.com', text, html));
    const [mail] = await smtp.waitFor('base64@example.com');
    const parts = partHeaders(mail?.raw ?? '');
    expect(parts).toHaveLength(2);
    for (const part of parts) expect(part).toContain('Content-Transfer-Encoding: base64');
    expect(mail?.parsed.text).toBe(text);
    expect(mail?.parsed.html).toBe(html);
  });
});
