import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import Fastify from 'fastify';
import { accessLine, registerAccessLog } from './access-log.js';
import { requestForLog } from './log-safety.js';

function collector(): { sink: Writable; lines: () => string[] } {
  let written = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString();
      done();
    },
  });
  return { sink, lines: () => written.split('\n').filter(Boolean) };
}

/** What pino itself writes for the access log's fields, through the app's `req` serialiser. */
function pinoLine(
  base: Record<string, string | number>,
  request: { id: string; method: string; url: string; ip: string },
  statusCode: number,
  responseTime: number,
): string {
  const { sink, lines } = collector();
  const logger = pino({ base, serializers: { req: requestForLog } }, sink);
  logger
    .child({ request_id: request.id })
    .info({ req: request, res: { statusCode }, responseTime }, 'request completed');
  return lines().join('\n');
}

describe('accessLine', () => {
  const base = { pid: 4242, hostname: 'web-1' };
  const bindings = ',"pid":4242,"hostname":"web-1"';
  const account = {
    id: 'req_0f3a',
    method: 'GET',
    url: '/v1/account',
    ip: '127.0.0.1',
    status: 200,
    time: 0.41,
  };
  const status = {
    id: 'req_9b1c',
    method: 'GET',
    url: '/v1/intakes/int_4f9KqZ2mX8pL0aB3cD5eFg/status',
    ip: '::1',
    status: 304,
    time: 1.25,
  };
  const signed = {
    id: 'req_"quoted"\\',
    method: 'POST',
    url: '/files/f?exp=1&sig=0a1b2c&name=caf\u00e9 "x"\n',
    ip: '10.0.0.7',
    status: 500,
    time: 12,
  };
  const cases = [account, status, signed];

  it.each(cases)('writes the line pino writes for $method $url', (c) => {
    const ours = JSON.parse(accessLine(bindings, 1_795_000_000_000, c, c.status, c.time)) as Record<
      string,
      unknown
    >;
    const theirs = JSON.parse(pinoLine(base, c, c.status, c.time)) as Record<string, unknown>;
    expect(Object.keys(ours)).toEqual(Object.keys(theirs));
    expect({ ...ours, time: 0 }).toEqual({ ...theirs, time: 0 });
    expect(ours.time).toBe(1_795_000_000_000);
  });

  it('is one line, shortens capabilities and ends with a newline', () => {
    const line = accessLine(bindings, 1, status, 304, 1.25);
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(line).toContain('"url":"/v1/intakes/int_4f9K…/status"');
    expect(accessLine(bindings, 1, signed, 500, 12)).not.toContain('0a1b2c');
  });

  it('writes the same line for a URL it wrote lately, and stays right past its memory of URLs', () => {
    const first = accessLine(bindings, 1, status, 304, 1);
    for (let n = 0; n < 1_500; n++) {
      const other = { ...status, url: `/v1/intakes/int_${String(n).padStart(16, '0')}/status?n=${n}` };
      const line = JSON.parse(accessLine(bindings, 1, other, 304, 1)) as { req: { url: string } };
      expect(line.req.url).toBe(`/v1/intakes/int_0000…/status?n=${n}`);
      if (n % 500 === 0) expect(accessLine(bindings, 1, status, 304, 1)).toBe(first);
    }
    expect(accessLine(bindings, 1, status, 304, 1)).toBe(first);
    expect(accessLine(bindings, 1, signed, 500, 12)).not.toContain('0a1b2c');
    // A long URL (not kept) is shortened all the same, every time.
    const long = { ...status, url: `/v1/intakes/int_4f9Kq2Zx8Lm3Pw7R/status?q=${'x'.repeat(400)}` };
    for (let n = 0; n < 2; n++)
      expect(accessLine(bindings, 1, long, 200, 1)).toContain('int_4f9K…/status?q=xxx');
  });

  it('writes null for a time that is not a number, as pino does', () => {
    expect(JSON.parse(accessLine('', 1, account, 200, Number.NaN))).toMatchObject({ responseTime: null });
  });
});

describe('registerAccessLog', () => {
  async function served(level: string): Promise<string[]> {
    const { sink, lines } = collector();
    const app = Fastify();
    registerAccessLog(app, { stream: sink, level, base: { pid: 1, hostname: 'h' } });
    app.get('/v1/thing', () => ({ ok: true }));
    app.get('/healthz', () => ({ ok: true }));
    await app.inject('/v1/thing');
    await app.inject('/v1/missing');
    await app.inject('/healthz');
    await app.close();
    return lines();
  }

  it('writes one line per answered request at info and below, none for the probes', async () => {
    for (const level of ['info', 'debug']) {
      const lines = (await served(level)).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((line) => line.res)).toEqual([{ statusCode: 200 }, { statusCode: 404 }]);
      expect(lines[0]).toMatchObject({ level: 30, pid: 1, hostname: 'h', msg: 'request completed' });
    }
  });

  it("writes the lines of one turn of the event loop in one write, at the turn's end, and what is held at close", async () => {
    const writes: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        writes.push(chunk.toString());
        done();
      },
    });
    const app = Fastify();
    registerAccessLog(app, { stream: sink, level: 'info', base: {} });
    app.get('/v1/thing', () => ({ ok: true }));
    await app.ready();
    vi.useFakeTimers({ toFake: ['setImmediate'] });
    try {
      for (const path of ['/v1/thing', '/v1/thing?a=1', '/v1/missing']) await app.inject(path);
      // Answered, held until the turn ends.
      expect(writes).toEqual([]);
      vi.runOnlyPendingTimers();
      expect(writes).toHaveLength(1);
      const urls = (writes[0] ?? '')
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { req: { url: string } }).req.url);
      expect(urls).toEqual(['/v1/thing', '/v1/thing?a=1', '/v1/missing']);
      // A line held when the app closes is written then, not lost.
      await app.inject('/v1/thing?b=2');
      await app.close();
      expect(writes).toHaveLength(2);
      expect(writes[1]).toContain('"url":"/v1/thing?b=2"');
    } finally {
      vi.useRealTimers();
    }
  });

  it('writes nothing above info', async () => {
    for (const level of ['warn', 'error', 'silent']) expect(await served(level)).toEqual([]);
  });
});
