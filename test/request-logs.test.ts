import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv } from './helpers/env.js';
import { intakeCommand } from './helpers/processes.js';

interface LogLine {
  request_id?: string;
  msg?: string;
  req?: { url?: string; headers?: Record<string, string> };
  res?: { statusCode?: number };
  [field: string]: unknown;
}

/** `npm start` as a newcomer runs it, with request logging on, its stdout collected line by line. */
describe('request logs of a running server', () => {
  let dataDir: string;
  let child: ChildProcessWithoutNullStreams;
  let url: string;
  let stdout = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'intake-logs-'));
    child = spawn(process.execPath, intakeCommand('serve'), {
      env: childEnv({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' }),
    });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed: ${stdout}`)), 20_000);
      const look = (): void => {
        const match = /listening on (http:\/\/[^\s"]+)/.exec(stdout);
        if (!match?.[1]) return;
        clearTimeout(timer);
        child.stdout.off('data', look);
        resolve(match[1]);
      };
      child.stdout.on('data', look);
    });
  });

  afterAll(async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    await rm(dataDir, { recursive: true, force: true });
  });

  function linesOf(requestId: string): LogLine[] {
    return stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.request_id === requestId);
  }

  async function waitForCompletion(requestId: string): Promise<LogLine[]> {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const lines = linesOf(requestId);
      if (lines.some((line) => line.res)) return lines;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no completion log line for ${requestId}:\n${stdout}`);
  }

  it('gives every request its id in the X-Request-Id header and on each of its log lines', async () => {
    const answers = await Promise.all([
      fetch(`${url}/v1/no-such-route`),
      fetch(`${url}/v1/account`, { headers: { authorization: 'Bearer svc_live_not_a_real_key' } }),
      fetch(`${url}/v1/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"broken": ',
      }),
      fetch(`${url}/pricing.json`),
    ]);
    const statuses = answers.map((answer) => answer.status);
    expect(statuses).toEqual([404, 401, expect.any(Number), 200]);
    expect(statuses[2]).toBeGreaterThanOrEqual(400);

    const ids = answers.map((answer) => answer.headers.get('x-request-id') ?? '');
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);

    for (const [index, id] of ids.entries()) {
      const lines = await waitForCompletion(id);
      // One access-log line per request: method, URL, client address, status and time together.
      const access = lines.filter((line) => line.req ?? line.res);
      expect(access).toHaveLength(1);
      expect(access[0]).toMatchObject({
        msg: 'request completed',
        req: { method: expect.any(String), url: expect.any(String), remoteAddress: expect.any(String) },
        res: { statusCode: statuses[index] },
        responseTime: expect.any(Number),
      });
    }
    // Every line about a request names its request: none is left without an id.
    const requestLines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.req ?? line.res);
    expect(requestLines.length).toBeGreaterThanOrEqual(4);
    for (const line of requestLines) expect(line.request_id).toMatch(/^req_[0-9a-f]{32}$/);
    // Health probes are not logged at all.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(stdout).not.toMatch(/"url":"\/healthz"/);
    // The key in the failed request never reaches the log.
    expect(stdout).not.toContain('svc_live_not_a_real_key');
  });
});
