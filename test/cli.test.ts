import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES, childEnv } from './helpers/env.js';
import { client } from './helpers/http.js';
import { intakeCommand } from './helpers/processes.js';
import { startTestServer, type TestServer } from './helpers/server.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI as the README says: through the `intake` bin (this run's build), or, with `via: 'npm'`,
 * exactly as `npm run --silent cli -- …` (the TypeScript sources through tsx).
 */
function cli(args: string[], env: Record<string, string>, via: 'bin' | 'npm' = 'bin'): Promise<Run> {
  return new Promise((resolve, reject) => {
    const [command, commandArgs] =
      via === 'npm'
        ? ['npm', ['run', '--silent', 'cli', '--', ...args]]
        : [process.execPath, intakeCommand(...args)];
    const child = spawn(command, commandArgs, {
      env: childEnv({ LOG_LEVEL: 'silent', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.each(DATABASES)('admin CLI against a running server on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => server.stop());

  it('creates an account while the server runs and prints exactly the JSON object', async () => {
    const run = await cli(
      ['accounts', 'create', '--email', 'cli@example.com', '--plan', 'solo', '--json'],
      server.env,
      'npm',
    );
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const created = JSON.parse(lines[0] ?? '') as Record<string, string>;
    expect(Object.keys(created)).toEqual(['account_id', 'live_key', 'test_key']);
    expect(created.account_id).toMatch(/^acct_[0-9A-Za-z]{22}$/);
    expect(created.live_key).toMatch(/^svc_live_/);
    expect(created.test_key).toMatch(/^svc_test_/);

    const account = await client(server.url, created.live_key).get('/v1/account');
    expect(account.status).toBe(200);
    expect(account.body).toMatchObject({ id: created.account_id, plan: 'solo', email: 'cli@example.com' });
    expect((await client(server.url, created.test_key).get('/v1/account')).body.livemode).toBe(false);

    const duplicate = await cli(['accounts', 'create', '--email', 'cli@example.com', '--json'], server.env);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stdout).toBe('');
    expect(duplicate.stderr).toContain('already exists');
  });

  it('sets a per-account rate limit override', async () => {
    const run = await cli(
      ['accounts', 'create', '--email', 'fast@example.com', '--rate-limit', '5000', '--json'],
      server.env,
    );
    const created = JSON.parse(run.stdout) as Record<string, string>;
    const c = client(server.url, created.live_key ?? '');
    expect((await c.get('/v1/account')).body.rate_limit_per_hour).toBe(5000);
    const set = await cli(['accounts', 'set-rate-limit', 'fast@example.com', '7'], server.env);
    expect(set.code, set.stderr).toBe(0);
    const after = await c.get('/v1/account');
    expect(after.body.rate_limit_per_hour).toBe(7);
    expect(after.headers.get('x-ratelimit-limit')).toBe('7');
  });

  it('rejects bad input with a message and exit code 1', async () => {
    const badPlan = await cli(
      ['accounts', 'create', '--email', 'x@example.com', '--plan', 'gold', '--json'],
      server.env,
    );
    expect(badPlan.code).toBe(1);
    expect(badPlan.stderr).toContain('plan');
    const badEmail = await cli(['accounts', 'create', '--email', 'not-an-email', '--json'], server.env);
    expect(badEmail.code).toBe(1);
    expect(badEmail.stderr).toContain('email');
  });
});

describe('serve', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'intake-serve-'));
  });
  afterAll(async () => rm(dataDir, { recursive: true, force: true }));

  it('starts on a fresh data directory, then drains on SIGTERM: readiness 503, exit 0', async () => {
    // The `intake` bin runs the service in its own process: SIGTERM reaches the server itself.
    const child = spawn(process.execPath, intakeCommand('serve'), {
      env: childEnv({ DATA_DIR: dataDir, PORT: '0', SHUTDOWN_GRACE_MS: '1500', LOG_LEVEL: 'warn' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed: ${stdout}`)), 20_000);
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(stdout);
        if (match?.[1] && stdout.includes('accounts create --email')) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    expect(stdout).toContain('Database: sqlite');
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    expect((await fetch(`${url}/readyz`)).status).toBe(200);

    child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const draining = await fetch(`${url}/readyz`);
    expect(draining.status).toBe(503);
    expect(((await draining.json()) as { status: string }).status).toBe('draining');
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
