import net from 'node:net';
import nodemailer from 'nodemailer';
import { parseConnectionUrl } from 'nodemailer/lib/shared/index.js';
import { quotedPrintablePart } from './quoted-printable.js';

/** One email ready to go. `messageId` is ours (msg_…): it becomes the Message-ID, so bounce reports name it. */
export interface OutgoingEmail {
  messageId: string;
  from: { name: string; address: string };
  to: string;
  replyTo?: string | undefined;
  subject: string;
  text: string;
  html: string;
  headers?: Record<string, string>;
}

export interface SentEmail {
  /** The transport's id for the message (the SMTP Message-ID), null when nothing left the process. */
  providerMessageId: string | null;
}

/**
 * Why a send failed. `permanent`: the server refused for good (SMTP 5xx): a hard bounce; the
 * address must not be tried again. Otherwise (connection, timeout, 4xx) the send may be retried.
 */
export class MailError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly responseCode: number | undefined,
    /** The caller's signal ended the wait: whether the relay accepted the message is unknown. */
    readonly aborted = false,
  ) {
    super(message);
    this.name = 'MailError';
  }
}

function abortedError(signal: AbortSignal): MailError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : 'aborted';
  return new MailError(`the send was abandoned: ${why}`, false, undefined, true);
}

/**
 * The send's outcome, or a MailError once `signal` aborts. nodemailer's sendMail cannot be cancelled:
 * the SMTP exchange under way ends by itself, bounded by the transport's socket time-out.
 */
function unlessAborted<T>(work: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work();
  if (signal.aborted) return Promise.reject(abortedError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortedError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work().then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** The email transport: health (readiness probe) and sending. Chosen once by configuration. */
export interface Mailer {
  readonly kind: 'outbox' | 'smtp';
  /** The sender address (the display name is the account's); null: the service's default. */
  readonly fromAddress: string | null;
  /** Throws when the transport cannot be reached (readiness probe). */
  check(): Promise<void>;
  /**
   * Sends one email; throws MailError. The outbox mailer keeps nothing itself: callers store the copy.
   * `signal` (the job's): aborted before the send starts, nothing is sent; aborted during it, the
   * call stops waiting at once and throws a MailError with `aborted` (the relay may still accept the
   * message: the caller must treat the outcome as unknown).
   */
  send(mail: OutgoingEmail, signal?: AbortSignal): Promise<SentEmail>;
  close(): void;
}

/** Without SMTP_URL every email lands in the outbox table, which lives in the database. */
export class OutboxMailer implements Mailer {
  readonly kind = 'outbox';
  readonly fromAddress = null;
  check(): Promise<void> {
    return Promise.resolve();
  }
  send(): Promise<SentEmail> {
    return Promise.resolve({ providerMessageId: null });
  }
  close(): void {}
}

/**
 * SMTP through nodemailer, pooled. SMTP_URL is `smtp[s]://user:pass@host:port`, optionally with
 * `?from=address` (the sender address; default no-reply@ the APP_URL host) and any nodemailer
 * transport option as a query parameter (e.g. `pool=false`, `maxConnections=10`).
 */
export class SmtpMailer implements Mailer {
  readonly kind = 'smtp';
  readonly fromAddress: string | null;
  private readonly transport: nodemailer.Transporter;

  constructor(url: string) {
    const parsed = new URL(url);
    this.fromAddress = parsed.searchParams.get('from');
    parsed.searchParams.delete('from');
    for (const [option, value] of Object.entries(POOL_DEFAULTS)) {
      if (!parsed.searchParams.has(option)) parsed.searchParams.set(option, value);
    }
    this.transport = nodemailer.createTransport({
      ...parseConnectionUrl(parsed.toString()),
      getSocket: openNoDelaySocket,
    });
  }

  async check(): Promise<void> {
    await this.transport.verify();
  }

  async send(mail: OutgoingEmail, signal?: AbortSignal): Promise<SentEmail> {
    try {
      const info = (await unlessAborted(
        () =>
          this.transport.sendMail({
            messageId: `<${mail.messageId}@${domainOf(mail.from.address)}>`,
            from: { name: mail.from.name, address: mail.from.address },
            to: mail.to,
            ...(mail.replyTo ? { replyTo: mail.replyTo } : {}),
            subject: mail.subject,
            ...bodyParts(mail.text, mail.html),
            headers: mail.headers ?? {},
          }),
        signal,
      )) as { messageId?: string };
      return { providerMessageId: info.messageId ?? null };
    } catch (error) {
      throw classifySmtpError(error);
    }
  }

  close(): void {
    this.transport.close();
  }
}

const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The text and HTML parts, as nodemailer would make them (multipart/alternative, UTF-8, the transfer
 * encoding textEncodingFor picks). Quoted-printable parts are encoded here and handed over whole
 * (headers and body), which nodemailer passes on as they are: its own encoder costs nearly three times
 * as much (bench/quoted-printable.ts). Base64 stays with nodemailer's encoder, which is native.
 */
function bodyParts(
  text: string,
  html: string,
): Pick<nodemailer.SendMailOptions, 'text' | 'html' | 'textEncoding' | 'alternatives'> {
  if (textEncodingFor(text, html) === 'base64') return { text, html, textEncoding: 'base64' };
  return {
    alternatives: [
      { contentType: TEXT_TYPE, raw: quotedPrintablePart(TEXT_TYPE, text) },
      { contentType: HTML_TYPE, raw: quotedPrintablePart(HTML_TYPE, html) },
    ],
  };
}

const TEXT_TYPE = 'text/plain; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';

/**
 * The transfer encoding nodemailer would choose for these texts (quoted-printable when Latin letters
 * outnumber control and non-ASCII characters, else base64), counted in one pass. Left to itself,
 * nodemailer counts with two global regex matches per text part, building an array of every letter:
 * about a millisecond of CPU and most of the garbage of sending a 16 KB reminder. The count stops as
 * soon as the characters left could not change the answer (checked every 1,024): half-way through a
 * mostly Latin email.
 */
export function textEncodingFor(...texts: string[]): 'quoted-printable' | 'base64' {
  let latin = 0;
  let other = 0;
  let left = 0;
  for (const text of texts) left += text.length;
  for (const text of texts) {
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122)) latin++;
      else if (code <= 8 || code === 11 || code === 12 || (code >= 14 && code <= 31) || code >= 128) other++;
      if ((i & 1023) === 1023) {
        const rest = left - i - 1;
        if (other + rest < latin) return 'quoted-printable';
        if (other >= latin + rest) return 'base64';
      }
    }
    left -= text.length;
  }
  return other < latin ? 'quoted-printable' : 'base64';
}

const POOL_DEFAULTS: Record<string, string> = {
  pool: 'true',
  maxConnections: '5',
  connectionTimeout: '10000',
  greetingTimeout: '10000',
  socketTimeout: '30000',
};

/**
 * Our own TCP socket with Nagle's algorithm off: SMTP is a chatty request-reply protocol, and with
 * Nagle on, a command written while the previous segment awaits its (delayed) ACK stalls ~40 ms per
 * message. nodemailer still does TLS (implicit or STARTTLS) on top of it.
 */
function openNoDelaySocket(
  options: { host?: string | undefined; port?: number | undefined; secure?: boolean | undefined },
  callback: (error: Error | null, socketOptions?: { connection: net.Socket }) => void,
): void {
  const socket = net.connect({
    host: options.host ?? 'localhost',
    port: options.port ?? (options.secure ? 465 : 587),
  });
  socket.setNoDelay(true);
  socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(new Error('SMTP connection timed out')));
  socket.once('connect', () => {
    socket.setTimeout(0);
    socket.removeAllListeners('error');
    callback(null, { connection: socket });
  });
  socket.once('error', (error) => callback(error));
}

function domainOf(address: string): string {
  return address.split('@')[1] ?? 'localhost';
}

/** nodemailer errors carry the SMTP reply code; 5xx (but not an authentication failure) is permanent. */
export function classifySmtpError(error: unknown): MailError {
  if (error instanceof MailError) return error;
  const detail = error as { message?: unknown; responseCode?: unknown; code?: unknown };
  const code = typeof detail.responseCode === 'number' ? detail.responseCode : undefined;
  const message = typeof detail.message === 'string' ? detail.message : String(error);
  const permanent = code !== undefined && code >= 500 && code < 600 && detail.code !== 'EAUTH';
  return new MailError(message.slice(0, 500), permanent, code);
}
