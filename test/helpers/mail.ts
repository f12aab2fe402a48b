import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  envelopeTo: string[];
  parsed: ParsedMail;
  raw: string;
}

/**
 * A real SMTP server on loopback. Recipients in `rejecting` (or containing "bounce") are refused at
 * RCPT TO with 550, as a mailbox that does not exist; every other message is kept in `received`.
 */
export async function startSmtpServer() {
  const received: ReceivedMail[] = [];
  const rejecting = new Set<string>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const to = address.address.toLowerCase();
      if (rejecting.has(to) || to.includes('bounce')) {
        const error = new Error(`5.1.1 <${to}>: Recipient address rejected: User unknown`) as Error & {
          responseCode: number;
        };
        error.responseCode = 550;
        callback(error);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw)
          .then((parsed) => {
            received.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), parsed, raw });
            callback();
          })
          .catch((error: Error) => callback(error));
      });
    },
  });
  // A sender that dies mid-session (the crash and scale tests SIGKILL processes) resets its connection;
  // smtp-server reports that as an 'error' on the server, which unheard would crash the test process.
  const connectionErrors: Error[] = [];
  server.on('error', (error: Error) => connectionErrors.push(error));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: `smtp://127.0.0.1:${port}?from=reminders%40example.test`,
    received,
    rejecting,
    /** Connection errors seen (a peer that vanished mid-session), for tests that care. */
    connectionErrors,
    /** The messages to one address, waiting (bounded) until at least `count` arrived. */
    async waitFor(to: string, count = 1, timeoutMs = 5000): Promise<ReceivedMail[]> {
      const started = Date.now();
      for (;;) {
        const mine = received.filter((m) => m.envelopeTo.includes(to));
        if (mine.length >= count || Date.now() - started > timeoutMs) return mine;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface SmsRequest {
  path: string;
  authorization: string | undefined;
  form: Record<string, string>;
}

/** An HTTP stub of Twilio's Messages API on loopback. +15005550009 is refused (21211), as Twilio does. */
export async function startSmsStub() {
  const requests: SmsRequest[] = [];
  let counter = 0;
  const server: Server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      requests.push({ path: request.url ?? '', authorization: request.headers.authorization, form });
      response.setHeader('content-type', 'application/json');
      if (form.To === '+15005550009') {
        response.statusCode = 400;
        response.end(
          JSON.stringify({
            code: 21211,
            message: "The 'To' number is not a valid phone number.",
            status: 400,
          }),
        );
        return;
      }
      counter++;
      response.statusCode = 201;
      response.end(JSON.stringify({ sid: `SM${String(counter).padStart(32, '0')}`, status: 'queued' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    requests,
    url: `http://AC0123456789:authtoken@127.0.0.1:${port}/2010-04-01/Accounts/AC0123456789/Messages.json?From=%2B15550001111`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
