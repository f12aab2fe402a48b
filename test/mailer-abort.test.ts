import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MailError, SmtpMailer, type OutgoingEmail } from '../src/modules/notify/mailer.js';
import { startSmtpServer } from './helpers/mail.js';

function email(to: string): OutgoingEmail {
  return {
    messageId: `msg_abort_${Math.random().toString(36).slice(2)}`,
    from: { name: 'Agency', address: 'reminders@example.test' },
    to,
    subject: 'Hello',
    text: 'Hello',
    html: '<p>Hello</p>',
  };
}

describe('SMTP sending honours the AbortSignal', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  /** A relay that accepts connections and never says a word (no greeting). */
  let silent: net.Server;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    smtp = await startSmtpServer();
    silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
    await smtp.close();
  });

  it('sends nothing when the signal is aborted before the send', async () => {
    const mailer = new SmtpMailer(smtp.url);
    try {
      const controller = new AbortController();
      controller.abort(new Error('the worker is shutting down'));
      const error = await mailer.send(email('early@example.com'), controller.signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MailError);
      expect(error).toMatchObject({ aborted: true, permanent: false });
      expect((error as MailError).message).toContain('shutting down');
      // The same mailer still sends when asked without an aborted signal.
      await mailer.send(email('later@example.com'), new AbortController().signal);
      expect(await smtp.waitFor('later@example.com')).toHaveLength(1);
      expect(smtp.received.filter((m) => m.envelopeTo.includes('early@example.com'))).toHaveLength(0);
    } finally {
      mailer.close();
    }
  });

  it('stops waiting as soon as the signal aborts, not after the relay time-outs', async () => {
    const port = (silent.address() as AddressInfo).port;
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${port}?pool=false`);
    try {
      const controller = new AbortController();
      const started = Date.now();
      setTimeout(() => controller.abort(new Error('the handler did not finish in time')), 200);
      const error = await mailer.send(email('slow@example.com'), controller.signal).catch((e: unknown) => e);
      // The greeting time-out is 10 s: the abort ended the wait long before.
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error).toMatchObject({ name: 'MailError', aborted: true });
    } finally {
      mailer.close();
    }
  });
});
