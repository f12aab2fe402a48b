import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { levels, type DestinationStream } from 'pino';
import { KeptLately } from '../lib/kept-lately.js';
import { loggableUrl } from './log-safety.js';

/** Probes poll these every few seconds: their lines would drown the rest. */
function quiet(url: string): boolean {
  return url === '/healthz' || url === '/readyz';
}

/** pino's number for `info`, which its lines carry as `level`. */
const INFO = 30;

/**
 * URLs lately written, as the line holds them (loggable, JSON-quoted): a polled URL comes again and
 * again. At most 1,000 of at most 256 characters, so long URLs cannot fill the memory.
 */
const urlsForLine = new KeptLately((url) => JSON.stringify(loggableUrl(url)), 1_000, 256);

/**
 * One access-log line, as pino would write it for
 * `request.log.info({ req, res, responseTime }, 'request completed')` through the app's serialisers:
 * the level, the time, the logger's bindings (`"pid":…,"hostname":…` from pino's base), the request's
 * id, `req` (method, URL with capabilities shortened, client address), `res` (status) and
 * `responseTime` (ms). Built by hand because it is written for every request: pino's generic path
 * (serialisers looked up per key, each value stringified apart) costs several times as much.
 */
export function accessLine(
  bindings: string,
  time: number,
  request: Pick<FastifyRequest, 'id' | 'method' | 'url' | 'ip'>,
  statusCode: number,
  responseTime: number,
): string {
  return (
    `{"level":${INFO},"time":${time}${bindings},"request_id":${JSON.stringify(request.id)},` +
    `"req":{"method":${JSON.stringify(request.method)},"url":${urlsForLine.get(request.url)},` +
    `"remoteAddress":${JSON.stringify(request.ip)}},"res":{"statusCode":${statusCode}},` +
    `"responseTime":${Number.isFinite(responseTime) ? responseTime : null},"msg":"request completed"}\n`
  );
}

/**
 * The access log: one line per request, at `info` (none below it), carrying the request's `request_id`
 * like every other line about it. It is written to the app's log stream at the end of the turn of the
 * event loop in which the answer was sent, with the other lines of that turn (the app's close writes
 * what is held). It holds what Fastify's two default lines held between them. Fastify's own request
 * logging is off (`disableRequestLogging`), which halves the log lines a busy server writes.
 */
export function registerAccessLog(
  app: FastifyInstance,
  log: { stream: DestinationStream; level: string; base: Record<string, string | number> },
): void {
  const level = levels.values[log.level];
  if (level === undefined || level > INFO) return;
  const { stream } = log;
  // The logger's bindings as pino renders them after the time: `,"pid":…,"hostname":…`.
  const rendered = JSON.stringify(log.base);
  const bindings = rendered === '{}' ? '' : `,${rendered.slice(1, -1)}`;
  // The lines of one turn of the event loop go to the stream together, at its end: one write for all
  // the requests a busy server answers in a turn instead of one each (a write costs the stream its
  // own bookkeeping, a conversion to bytes and, when none is under way, a write to the file).
  let held = '';
  const flush = () => {
    if (held === '') return;
    const lines = held;
    held = '';
    stream.write(lines);
  };
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    if (!quiet(request.url)) {
      if (held === '') setImmediate(flush);
      held += accessLine(bindings, Date.now(), request, reply.statusCode, reply.elapsedTime);
    }
    done();
  });
  app.addHook('onClose', (_app, done) => {
    flush();
    done();
  });
}
