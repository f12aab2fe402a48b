/**
 * Memory of the API process (see bench/README.md, "Memory"): the service runs as in production, built
 * (`scripts/build.js` into dist/) and started with `node dist/main.js serve` and the Node options of
 * `npm start` (package.json's start script, so its heap limit too) in a child process of its own
 * (SQLite in a fresh temporary directory, its info log on stdout into a file), and its resident set
 * (VmRSS from /proc) is sampled every 50 ms from here while
 *
 * 1. the four polled reads are loaded one after another with autocannon (whole answers, no
 *    If-None-Match) while an intake is created every 100 ms, so answers are built anew all along;
 * 2. one file of BENCH_UPLOAD_BYTES (default 1 GiB) is uploaded as a raw body to
 *    `POST /portal/api/:id/items/:key/files`;
 * 3. the same file is uploaded through tus (creation, then one PATCH with the whole file).
 *
 * Goals: RSS under the read load < 200 MB; each upload adds < 64 MB to the RSS it started from.
 * Environment: BENCH_SECONDS (per read, default 10; 2 with BENCH_QUICK=1), BENCH_CONNECTIONS (default 10),
 * BENCH_UPLOAD_BYTES (default 1 GiB; 64 MiB with BENCH_QUICK=1).
 * Linux only (/proc). Loopback only; the temporary directory is removed at the end.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomFill } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/db/database.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
// The composition root's answers and subscribers, wired as the CLI wires them: the account's
// creation asks other modules (its keys ask how many OAuth grants the plan has left).
import '../src/subscribers.js';
import { printGoalLines, type MemoryGoal } from './goal-lines.js';
import { INTAKE_BODY } from './intake-body.js';
import { CONNECTIONS, MEASURE_SECONDS, positiveNumberFromEnv, toError } from './load.js';
import { QUICK } from './result.js';

const MB = 1_000_000;
const MiB = 1024 * 1024;
const UPLOAD_BYTES = Math.round(positiveNumberFromEnv('BENCH_UPLOAD_BYTES', (QUICK ? 64 : 1024) * MiB));
const READ_GOAL_MB = 200;
const UPLOAD_GOAL_MB = 64;
const SAMPLE_MS = 50;
const DRAFT_BODY = JSON.stringify({ ...INTAKE_BODY, send: false });

interface Ready {
  url: string;
  key: string;
  intakeId: string;
  uploadIntakeId: string;
}

async function rssOf(pid: number): Promise<number> {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  if (!match?.[1]) throw new Error(`No VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

/** The child's RSS before `work`, and the highest seen while it runs. */
async function sampled<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ before: number; peak: number; value: T }> {
  const before = await rssOf(pid);
  let peak = before;
  const timer = setInterval(() => {
    void rssOf(pid).then(
      (rss) => (peak = Math.max(peak, rss)),
      () => undefined,
    );
  }, SAMPLE_MS);
  try {
    const value = await work();
    peak = Math.max(peak, await rssOf(pid));
    return { before, peak, value };
  } finally {
    clearInterval(timer);
  }
}

/**
 * The Node options `npm start` gives the service (`node <options> dist/main.js serve` in package.json's
 * start script): this measures the process `npm start` runs.
 */
async function startOptions(root: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    scripts?: { start?: string };
  };
  const command = /\bnode((?: --[\w-]+(?:=\S+)?)*) dist\/main\.js serve\b/.exec(
    manifest.scripts?.start ?? '',
  );
  if (!command) throw new Error('package.json: the start script does not run `node … dist/main.js serve`');
  return (command[1] ?? '').split(' ').filter((option) => option !== '');
}

/** `intake serve` from the compiled build, its log (stdout, at info) into a file, as in production. */
async function startService(dir: string): Promise<{ child: ChildProcess; url: string; options: string[] }> {
  const root = join(import.meta.dirname, '..');
  const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.js')], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('The build failed');
  const logPath = join(dir, 'service.log');
  const log = await open(logPath, 'w');
  const options = await startOptions(root);
  const child = spawn(process.execPath, [...options, join(root, 'dist', 'main.js'), 'serve'], {
    env: { ...process.env, PORT: '0', DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'info' },
    stdio: ['ignore', log.fd, 'inherit'],
  });
  await log.close();
  for (let attempt = 0; attempt < 1200; attempt++) {
    if (child.exitCode !== null) throw new Error(`The service exited (${child.exitCode})`);
    const url = /listening on (http:\/\/[^\s"]+)/.exec(await readFile(logPath, 'utf8'))?.[1];
    if (url) return { child, url, options };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('The service did not start within 120 s');
}

/**
 * An account (made through the service's own database, as the CLI does), 25 drafts and one sent intake
 * for the reads (test key), and one live intake for the uploads (test mode's storage quota is 1 GiB).
 */
async function prepare(dir: string, url: string): Promise<Ready> {
  const db = openDatabase({ databaseUrl: undefined, dataDir: join(dir, 'data') });
  const account = await createAccount(
    db.kysely,
    { email: 'bench-memory@example.com', plan: 'agency', rateLimitPerHour: 100_000_000 },
    new Date().toISOString(),
  ).finally(() => db.close());
  const create = async (send: boolean, key: string): Promise<string> => {
    const response = await fetch(`${url}/v1/intakes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...INTAKE_BODY, send }),
    });
    const body = (await response.json()) as { intake_id?: string };
    if (response.status !== 201 || !body.intake_id) throw new Error(`Creation answered ${response.status}`);
    return body.intake_id;
  };
  for (let i = 0; i < 25; i++) await create(false, account.test_key);
  return {
    url,
    key: account.test_key,
    intakeId: await create(true, account.test_key),
    uploadIntakeId: await create(true, account.live_key),
  };
}

function load(url: string, headers: Record<string, string>): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      { url, headers, connections: CONNECTIONS, duration: MEASURE_SECONDS, workers: 1 },
      (error, result) => (error ? reject(toError(error)) : resolve(result)),
    );
  });
}

async function makeFile(path: string, bytes: number): Promise<void> {
  const file = await open(path, 'w');
  const chunk = Buffer.alloc(MiB);
  try {
    for (let written = 0; written < bytes; written += chunk.length) {
      await new Promise<void>((resolve, reject) => randomFill(chunk, (e) => (e ? reject(e) : resolve())));
      // A marker with NUL bytes first: content sniffing sees an unknown binary file.
      if (written === 0) chunk.write('\0\0BENCH\0\0');
      await file.write(chunk, 0, Math.min(chunk.length, bytes - written));
    }
  } finally {
    await file.close();
  }
}

/** One HTTP request with the file as its body; resolves with the status and the response headers. */
function send(
  url: string,
  method: string,
  headers: Record<string, string | number>,
  path?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    if (path) createReadStream(path).pipe(req);
    else req.end();
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'intake-bench-memory-'));
  let child: ChildProcess | undefined;
  const cleanup = async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    const started = await startService(dir);
    child = started.child;
    const { url, key, intakeId, uploadIntakeId } = await prepare(dir, started.url);
    const pid = child.pid ?? 0;
    const auth = { authorization: `Bearer ${key}` };
    const idle = await rssOf(pid);
    process.stderr.write(
      `Service ready (node ${started.options.join(' ')}), RSS ${(idle / MB).toFixed(1)} MB; load average ${os.loadavg()[0]?.toFixed(2)}\n`,
    );

    // 1. Read load, with a creation every 100 ms so answers keep being built.
    const reads = ['/v1/account', '/v1/intakes', `/v1/intakes/${intakeId}`, `/v1/intakes/${intakeId}/status`];
    let writing = true;
    const writer = (async () => {
      while (writing) {
        await fetch(`${url}/v1/intakes`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: DRAFT_BODY,
        }).then(
          (answer) => answer.arrayBuffer(),
          () => undefined,
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const readPass = await sampled(pid, async () => {
      let answered = 0;
      for (const path of reads) {
        process.stderr.write(`Loading ${path} for ${MEASURE_SECONDS} s\n`);
        const result = await load(`${url}${path}`, auth);
        if (result.non2xx > 0 || result.errors > 0)
          throw new Error(`${path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        answered += result['2xx'];
      }
      return answered;
    });
    writing = false;
    await writer;

    // 2 and 3. The uploads.
    const source = join(dir, 'upload.bin');
    await makeFile(source, UPLOAD_BYTES);
    const portal = `${url}/portal/api/${uploadIntakeId}/items/assets`;
    process.stderr.write(`Uploading ${UPLOAD_BYTES} bytes as a raw body\n`);
    const plain = await sampled(pid, async () => {
      const answer = await send(
        `${portal}/files`,
        'POST',
        {
          'content-type': 'application/octet-stream',
          'content-length': UPLOAD_BYTES,
          'x-filename': 'plain.bin',
        },
        source,
      );
      if (answer.status !== 201) throw new Error(`Plain upload answered ${answer.status}: ${answer.body}`);
    });
    process.stderr.write(`Uploading ${UPLOAD_BYTES} bytes through tus\n`);
    const tus = await sampled(pid, async () => {
      const created = await send(`${portal}/tus`, 'POST', {
        'tus-resumable': '1.0.0',
        'upload-length': UPLOAD_BYTES,
        'upload-metadata': `filename ${Buffer.from('tus.bin').toString('base64')}`,
        'content-length': 0,
      });
      const location = created.headers.location;
      if (created.status !== 201 || typeof location !== 'string') {
        throw new Error(`tus creation answered ${created.status}: ${created.body}`);
      }
      const patched = await send(
        new URL(location, url).toString(),
        'PATCH',
        {
          'tus-resumable': '1.0.0',
          'upload-offset': 0,
          'content-type': 'application/offset+octet-stream',
          'content-length': UPLOAD_BYTES,
        },
        source,
      );
      if (patched.status !== 204) throw new Error(`tus PATCH answered ${patched.status}: ${patched.body}`);
    });

    const mb = (bytes: number) => Math.round((bytes / MB) * 10) / 10;
    const rows = [
      ['Idle, ready', mb(idle), mb(idle), 0],
      [
        `Read load (${readPass.value} reads, a creation every 100 ms)`,
        mb(readPass.before),
        mb(readPass.peak),
        mb(readPass.peak - readPass.before),
      ],
      [
        `Raw-body upload, ${mb(UPLOAD_BYTES)} MB`,
        mb(plain.before),
        mb(plain.peak),
        mb(plain.peak - plain.before),
      ],
      [
        `tus upload (one PATCH), ${mb(UPLOAD_BYTES)} MB`,
        mb(tus.before),
        mb(tus.peak),
        mb(tus.peak - tus.before),
      ],
    ];
    process.stdout.write(
      [
        '',
        '| Phase | RSS before (MB) | RSS peak (MB) | Added (MB) |',
        '| --- | ---: | ---: | ---: |',
        ...rows.map((row) => `| ${row.join(' | ')} |`),
        '',
        `MB = 10^6 bytes; the API process alone (its own child process), sampled every ${SAMPLE_MS} ms.`,
        '',
      ].join('\n'),
    );
    const goals: MemoryGoal[] = [
      {
        name: 'memory.reads.rss',
        goal: `<${READ_GOAL_MB}`,
        baseline: "none: the API process's peak RSS under the read load",
        unit: 'MB',
        value: mb(readPass.peak),
        idle: mb(idle),
      },
      {
        name: 'memory.upload.plain',
        goal: `<${UPLOAD_GOAL_MB}`,
        baseline: 'none: RSS added by the upload (its peak less the RSS before it)',
        unit: 'MB',
        value: mb(plain.peak - plain.before),
        bytes: UPLOAD_BYTES,
      },
      {
        name: 'memory.upload.tus',
        goal: `<${UPLOAD_GOAL_MB}`,
        baseline: 'none: RSS added by the upload (its peak less the RSS before it)',
        unit: 'MB',
        value: mb(tus.peak - tus.before),
        bytes: UPLOAD_BYTES,
      },
    ];
    printGoalLines(goals);
  } finally {
    await cleanup();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`\nBenchmark failed: ${toError(error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
