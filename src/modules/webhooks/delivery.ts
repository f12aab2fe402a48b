import type * as Undici from 'undici';
import { onFirstUse } from '../../lib/on-first-use.js';
import { AddressRefusedError, classifyAddress, guardedLookup, hostOf, refusedAmong } from './ssrf.js';

/**
 * One webhook HTTP request: POST, no redirects followed (a 3xx is a failure), an overall deadline,
 * the response body read up to a cap. Connections go through an undici Agent whose lookup refuses
 * non-public addresses unless private ones are allowed, so the address checked is the one used.
 */

export const USER_AGENT = 'IntakeService-Webhooks/1.0';
export const RESPONSE_EXCERPT_BYTES = 4_096;

export type AttemptOutcome = 'succeeded' | 'failed' | 'gone';

export interface HttpAttempt {
  outcome: AttemptOutcome;
  status: number | null;
  excerpt: string | null;
  error: string | null;
  durationMs: number;
  /** The attempt was cut short (its job stopped): nothing is known about it, so nothing is recorded. */
  interrupted: boolean;
}

export interface SendOptions {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Aborts the request (the attempt's job is stopped: shutdown, or its time ran out); nothing is recorded. */
  shutdown: AbortSignal;
}

/**
 * undici, loaded by the first webhook a process sends: a process that delivers none (an API process,
 * or any without endpoints) never loads it (about 5 MB of resident memory).
 */
const loadUndici = onFirstUse<typeof Undici>('undici');

export class WebhookHttpClient {
  private agent: Undici.Agent | undefined;

  constructor(private readonly allowPrivate: () => boolean) {}

  /** The connection pool, made with the first request. */
  private dispatcher(): Undici.Agent {
    this.agent ??= new (loadUndici().Agent)({
      connect: { lookup: guardedLookup(this.allowPrivate) },
      keepAliveTimeout: 10_000,
      // Deadlines are the caller's AbortSignal; these only stop undici's own longer defaults.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    return this.agent;
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }

  async send(options: SendOptions): Promise<HttpAttempt> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const literal = this.refusedLiteral(options.url);
    if (literal) return failure(literal.message, elapsed());
    // One controller, aborted by the deadline or by the job's signal, both let go of at the end (the
    // job's signal outlives the request: a listener left on it would pile up).
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('deadline'));
    }, options.timeoutMs);
    const stop = () => controller.abort(options.shutdown.reason);
    if (options.shutdown.aborted) stop();
    else options.shutdown.addEventListener('abort', stop, { once: true });
    const { signal } = controller;
    let status: number;
    let excerpt = '';
    try {
      const response = await loadUndici().request(options.url, {
        method: 'POST',
        headers: options.headers,
        body: options.body,
        dispatcher: this.dispatcher(),
        signal,
      });
      status = response.statusCode;
      try {
        excerpt = await readCapped(response.body, RESPONSE_EXCERPT_BYTES);
      } catch {
        // The status decides; a body cut short by the deadline keeps what arrived.
      }
    } catch (error) {
      if (options.shutdown.aborted) {
        return { ...failure('interrupted by shutdown', elapsed()), interrupted: true };
      }
      const message = timedOut
        ? `no response within ${formatSeconds(options.timeoutMs)}`
        : describeError(error);
      return failure(message, elapsed());
    } finally {
      clearTimeout(timer);
      options.shutdown.removeEventListener('abort', stop);
    }
    const durationMs = elapsed();
    const base = { status, excerpt: excerpt === '' ? null : excerpt, durationMs, interrupted: false };
    if (status >= 200 && status < 300) return { ...base, outcome: 'succeeded', error: null };
    if (status === 410) return { ...base, outcome: 'gone', error: 'HTTP 410: the endpoint is deregistered' };
    if (status >= 300 && status < 400) {
      return { ...base, outcome: 'failed', error: `HTTP ${status}: redirects are not followed` };
    }
    return { ...base, outcome: 'failed', error: `HTTP ${status}` };
  }

  /** An IP-literal host is never looked up, so the guard checks it here. */
  private refusedLiteral(raw: string): AddressRefusedError | undefined {
    if (this.allowPrivate()) return undefined;
    const host = hostOf(new URL(raw));
    if (classifyAddress(host) === 'invalid') return undefined;
    return refusedAmong(host, [host]);
  }
}

function failure(error: string, durationMs: number): HttpAttempt {
  return { outcome: 'failed', status: null, excerpt: null, error, durationMs, interrupted: false };
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= cap) {
      body.destroy();
      break;
    }
  }
  // Cut at the cap, then drop a partial UTF-8 character at the end.
  return Buffer.concat(chunks)
    .subarray(0, cap)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** A short reason from a network error: its code and message, the cause's when it wraps one. */
function describeError(error: unknown): string {
  const refused = findCause(error, (e) => e instanceof AddressRefusedError);
  if (refused) return refused.message;
  const coded = findCause(error, (e) => typeof (e as { code?: unknown }).code === 'string');
  const target = coded ?? (error instanceof Error ? error : undefined);
  if (!target) return String(error);
  const code = (target as { code?: string }).code;
  return code && !target.message.includes(code) ? `${target.message} (${code})` : target.message;
}

function findCause(error: unknown, test: (e: Error) => boolean): Error | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (test(current)) return current;
    current = current.cause;
  }
  return undefined;
}
