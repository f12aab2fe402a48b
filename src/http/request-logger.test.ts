import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLogger, requestLoggerFactory } from './request-logger.js';

/** A pino logger at `level` writing its lines into `lines`, counting the children it makes. */
function parentLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  let children = 0;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n'))
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level, onChild: () => void children++ }, stream);
  return { logger, lines, children: () => children };
}

/** pino writes to a stream asynchronously: the lines have arrived after a turn. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('a request logger', () => {
  it('makes no child until a line is written, then one, whose lines carry the bindings', async () => {
    const parent = parentLogger('info');
    const log = new RequestLogger(parent.logger, { request_id: 'req_1' }, {});
    expect(parent.children()).toBe(0);
    expect(log.level).toBe('info');

    // A level the parent leaves out writes nothing and makes nothing.
    log.debug('not written');
    log.trace({ detail: 1 }, 'not written either');
    expect(parent.children()).toBe(0);

    log.info({ step: 'one' }, 'first line');
    log.error(new Error('broken'), 'second line');
    log.warn('third line %s', 'formatted');
    await settled();
    expect(parent.children()).toBe(1);
    expect(parent.lines.map((line) => [line.request_id, line.msg])).toEqual([
      ['req_1', 'first line'],
      ['req_1', 'second line'],
      ['req_1', 'third line formatted'],
    ]);
    expect(parent.lines[0]?.step).toBe('one');
    expect((parent.lines[1]?.err as { message?: string } | undefined)?.message).toBe('broken');
  });

  it('keeps the options it was given: a route level below the parent writes that level', async () => {
    const parent = parentLogger('info');
    const log = new RequestLogger(parent.logger, { request_id: 'req_2' }, { level: 'debug' });
    expect(log.level).toBe('debug');
    log.debug('route-level debug');
    await settled();
    expect(parent.lines.map((line) => [line.request_id, line.msg])).toEqual([['req_2', 'route-level debug']]);
  });

  it("gives its children the request's bindings and follows a level set on it", async () => {
    const parent = parentLogger('info');
    const log = new RequestLogger(parent.logger, { request_id: 'req_3' }, {});
    log.child({ part: 'upload' }).info('from the child');
    log.level = 'warn';
    log.info('left out');
    log.warn('kept');
    await settled();
    expect(parent.lines.map((line) => [line.request_id, line.part, line.msg])).toEqual([
      ['req_3', 'upload', 'from the child'],
      ['req_3', undefined, 'kept'],
    ]);
  });

  it("as Fastify's child logger factory: a request that logs nothing makes no child, one that does logs its id", async () => {
    const parent = parentLogger('info');
    let requests = 0;
    const app = Fastify({
      loggerInstance: parent.logger,
      childLoggerFactory: requestLoggerFactory,
      genReqId: () => `req_${++requests}`,
      logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    });
    app.get('/quiet', () => ({ ok: true }));
    app.get('/noisy', (request) => {
      request.log.error({ reason: 'test' }, 'something went wrong');
      return { ok: true };
    });
    try {
      await app.ready();
      // Fastify's own children of the app's logger (its plugins'), made at start: not the requests'.
      const atStart = parent.children();
      const quiet = await app.inject('/quiet');
      expect(quiet.statusCode).toBe(200);
      expect(parent.children()).toBe(atStart);
      const noisy = await app.inject('/noisy');
      expect(noisy.statusCode).toBe(200);
      await settled();
      expect(parent.children()).toBe(atStart + 1);
      expect(parent.lines.map((line) => [line.request_id, line.reason, line.msg])).toEqual([
        ['req_2', 'test', 'something went wrong'],
      ]);
    } finally {
      await app.close();
    }
  });
});
