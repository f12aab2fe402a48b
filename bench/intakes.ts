/**
 * Intake benchmark, in one run on SQLite in a fresh temporary DATA_DIR (see bench/README.md,
 * "Intakes and uploads"):
 *
 * 1. requests/s of `POST /v1/intakes` (a 4-item definition, test-mode key) against a bare Fastify
 *    POST route taking the same JSON body;
 * 2. requests/s of `GET /v1/intakes/:id/status` against a bare Fastify GET route, as polled (kept
 *    between commits) and cold (every read as if a commit had just come before it);
 * 3. throughput and peak RSS of one large raw-body upload to `POST /portal/api/:id/items/:key/files`
 *    against a plain copy of the same file (`fs.copyFile`, and a read → write stream pipeline), with
 *    diagnostic stages in between (read + SHA-256; raw body into a file on a bare Fastify route, with
 *    and without hashing).
 *
 * Environment: BENCH_SECONDS (measured seconds per route and round, default 10), BENCH_WARMUP_SECONDS
 * (default 2), BENCH_CONNECTIONS (default 10), BENCH_ROUNDS (alternating rounds per ratio, default 3; the
 * three shorter with BENCH_QUICK=1, see bench/load.ts), BENCH_UPLOAD_BYTES (size of the uploaded file,
 * default 1 GiB), BENCH_UPLOAD_CONTENT (binary, the default: random bytes; or text: CSV lines).
 */
import { createHash, randomFill } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os, { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Worker } from 'node:worker_threads';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer, type RunningServer } from '../src/server.js';
import { withEveryReadAfterACommit } from './cold.js';
import { INTAKE_BODY_JSON } from './intake-body.js';
import {
  CONNECTIONS,
  MEASURE_SECONDS,
  ROUNDS,
  WARMUP_SECONDS,
  call,
  measurePair,
  positiveNumberFromEnv,
  stringField,
  toError,
  type RouteResult,
  type Target,
} from './load.js';
import { cleanUpOnSignals, cleanupOnce } from './processes.js';

/** The service's limit for the benchmark keys: the limiter runs on every request but never rejects. */
const RATE_LIMIT_PER_HOUR = 100_000_000;
/** The upload keeps at least this share of a plain file copy's throughput. */
const UPLOAD_TARGET_RATIO = 0.5;
/** Memory stays flat: the peak RSS growth during the upload stays under this share of the file size. */
const UPLOAD_MEMORY_TARGET_SHARE = 0.1;
/** bench/README.md's target for authenticated, database-backed reads (applied to the status read). */
const READ_TARGET_RATIO = 0.5;
const RSS_SAMPLE_MS = 50;
const MB = 1_000_000;
const MiB = 1024 * 1024;

const UPLOAD_BYTES = Math.round(positiveNumberFromEnv('BENCH_UPLOAD_BYTES', 1024 * MiB));
const UPLOAD_CONTENTS = ['binary', 'text'] as const;
type UploadContent = (typeof UPLOAD_CONTENTS)[number];
const UPLOAD_CONTENT = uploadContentFromEnv();
/** An upload that has not finished after this long fails the run (at least 10 MB/s, at least 30 s). */
const UPLOAD_TIMEOUT_MS = Math.max(30, UPLOAD_BYTES / (10 * MB)) * 1000;

function uploadContentFromEnv(): UploadContent {
  const raw = process.env.BENCH_UPLOAD_CONTENT;
  if (raw === undefined || raw === '') return 'binary';
  const found = UPLOAD_CONTENTS.find((content) => content === raw);
  if (!found) throw new Error(`BENCH_UPLOAD_CONTENT must be binary or text, got "${raw}"`);
  return found;
}

/**
 * The item of INTAKE_BODY the upload goes to: type `file`, no formats constraint, so only the plan limit
 * applies.
 */
const UPLOAD_ITEM_KEY = 'assets';

// ---------------------------------------------------------------------------------------------
// Memory sampling

interface MemoryResult {
  /** RSS just before the pass started. */
  rssBeforeBytes: number;
  /** Highest RSS seen by the 50 ms sampler during the pass. */
  rssPeakBytes: number;
  rssDeltaBytes: number;
  /** The kernel's high-water mark (VmHWM, reset before the pass) where Linux offers it, else null. */
  kernelPeakRssBytes: number | null;
  samples: number;
  /** The longest gap between two samples (a blocked event loop delays the sampler). */
  maxSampleGapMs: number;
}

const PROC_STATUS = '/proc/self/status';

async function kernelPeakRss(): Promise<number | null> {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(await readFile(PROC_STATUS, 'utf8'));
    return match?.[1] ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Resets VmHWM to the current RSS (Linux ≥ 4.0); false where that is not possible. */
async function resetKernelPeakRss(): Promise<boolean> {
  try {
    await writeFile('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

async function sampleMemory<T>(work: () => Promise<T>): Promise<{ value: T; memory: MemoryResult }> {
  const kernelReset = await resetKernelPeakRss();
  const before = process.memoryUsage().rss;
  let peak = before;
  let samples = 0;
  let last = performance.now();
  let maxGap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    samples++;
    peak = Math.max(peak, process.memoryUsage().rss);
  }, RSS_SAMPLE_MS);
  try {
    const value = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return {
      value,
      memory: {
        rssBeforeBytes: before,
        rssPeakBytes: peak,
        rssDeltaBytes: peak - before,
        kernelPeakRssBytes: kernelReset ? await kernelPeakRss() : null,
        samples,
        maxSampleGapMs: Math.max(maxGap, performance.now() - last),
      },
    };
  } finally {
    clearInterval(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// File passes

interface PassResult {
  pass: string;
  bytes: number;
  seconds: number;
  megabytesPerSecond: number;
  memory: MemoryResult;
  /** Process CPU time (user + system, all threads: servers, upload client, libuv pool) during the pass. */
  cpuSeconds: number;
  /** Share of the pass the main thread (both servers, the copy streams) was busy: 1 = CPU-bound there. */
  mainThreadUtilization: number;
  /** For HTTP uploads: seconds until the client had written the last byte (the rest is the server's). */
  sendSeconds?: number;
}

async function timedPass(
  pass: string,
  bytes: number,
  work: () => Promise<number | undefined>,
): Promise<PassResult> {
  process.stderr.write(`${pass} … `);
  const cpuBefore = process.cpuUsage();
  const loopBefore = performance.eventLoopUtilization();
  const started = performance.now();
  const { value: sendMs, memory } = await sampleMemory(work);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const megabytesPerSecond = bytes / MB / seconds;
  process.stderr.write(`${megabytesPerSecond.toFixed(0)} MB/s\n`);
  return {
    pass,
    bytes,
    seconds,
    megabytesPerSecond,
    memory,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    mainThreadUtilization: performance.eventLoopUtilization(loopBefore).utilization,
    ...(sendMs === undefined ? {} : { sendSeconds: sendMs / 1000 }),
  };
}

/** One CSV line, repeated to fill the `text` upload (a large export). */
const CSV_LINE = '1042,Northwind Bakery,2026-11-23,"Rye sourdough, 750 g",12.50\n';

/**
 * Writes `bytes` streamed in 1 MiB chunks. `binary`: incompressible data starting with a fixed marker
 * holding NUL bytes, so content sniffing classifies it as an unknown binary file at once, never as an
 * image or text by chance. `text`: CSV lines (plain text to content sniffing).
 */
async function generateSourceFile(path: string, bytes: number, content: UploadContent): Promise<void> {
  const fill = (buffer: Buffer): Promise<Buffer> =>
    new Promise((resolve, reject) =>
      randomFill(buffer, (error, filled) => (error ? reject(error) : resolve(filled))),
    );
  async function* chunks(): AsyncGenerator<Buffer> {
    let left = bytes;
    let first = true;
    while (left > 0) {
      const size = Math.min(MiB, left);
      if (content === 'text') {
        left -= size;
        yield Buffer.alloc(size, CSV_LINE);
        continue;
      }
      const chunk = await fill(Buffer.allocUnsafe(size));
      if (first) {
        Buffer.from('intake-bench\0\0\0\0').copy(chunk, 0, 0, Math.min(16, chunk.length));
        first = false;
      }
      left -= chunk.length;
      yield chunk;
    }
  }
  await pipeline(Readable.from(chunks()), createWriteStream(path));
  await flushToDisk(path);
}

/**
 * Waits until the file's bytes are on disk, so its dirty pages are not written back during (and do
 * not slow down) the timed passes that follow.
 */
async function flushToDisk(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

interface UploadReply {
  status: number;
  body: string;
  totalMs: number;
  sendMs: number;
}

/**
 * The upload client, in its own thread (like autocannon) so it does not share the server's event loop.
 * Plain JavaScript, evaluated: it streams the file with node:http as the raw body once told to start.
 */
const UPLOAD_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { createReadStream } = require('node:fs');
const http = require('node:http');
const { performance } = require('node:perf_hooks');
parentPort.once('message', () => {
  const started = performance.now();
  let sentAt = NaN;
  const fail = (error) => parentPort.postMessage({ error: String((error && error.stack) || error) });
  const request = http.request(
    workerData.url,
    { method: 'POST', headers: workerData.headers, agent: false },
    (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('error', fail);
      response.on('end', () =>
        parentPort.postMessage({
          status: response.statusCode,
          body: Buffer.concat(chunks).toString('utf8'),
          totalMs: performance.now() - started,
          sendMs: sentAt - started,
        }),
      );
    },
  );
  request.on('error', fail);
  request.on('finish', () => { sentAt = performance.now(); });
  const source = createReadStream(workerData.path);
  source.on('error', (error) => { request.destroy(error); fail(error); });
  source.pipe(request);
});
parentPort.postMessage({ ready: true });
`;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * Starts the client thread and waits until it is up, so its own memory is in the baseline RSS; the
 * returned function starts the upload and resolves with the client's view of it.
 */
async function prepareUpload(
  url: string,
  path: string,
  bytes: number,
  headers: Record<string, string>,
): Promise<() => Promise<UploadReply>> {
  const worker = new Worker(UPLOAD_CLIENT, {
    eval: true,
    workerData: { url, path, headers: { ...headers, 'content-length': String(bytes) } },
  });
  let settle: ((reply: UploadReply) => void) | undefined;
  let fail: ((error: Error) => void) | undefined;
  const done = new Promise<UploadReply>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  // Attached now so an early failure is never an unhandled rejection.
  done.catch(() => undefined);
  await new Promise<void>((resolve, reject) => {
    worker.on('message', (message: unknown) => {
      if (!isRecord(message)) return;
      if (message.ready === true) resolve();
      else if (typeof message.error === 'string') fail?.(new Error(`Upload client: ${message.error}`));
      else settle?.(message as unknown as UploadReply);
    });
    worker.once('error', (error) => {
      reject(error);
      fail?.(error);
    });
  });
  return async () => {
    worker.postMessage('go');
    let guard: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      guard = setTimeout(
        () => reject(new Error(`The upload did not finish within ${UPLOAD_TIMEOUT_MS / 1000} s`)),
        UPLOAD_TIMEOUT_MS,
      );
    });
    try {
      return await Promise.race([done, timeout]);
    } finally {
      clearTimeout(guard);
      await worker.terminate();
    }
  };
}

async function uploadPass(
  pass: string,
  url: string,
  path: string,
  bytes: number,
  headers: Record<string, string>,
): Promise<{ result: PassResult; reply: UploadReply }> {
  const start = await prepareUpload(url, path, bytes, headers);
  let reply: UploadReply | undefined;
  const result = await timedPass(pass, bytes, async () => {
    reply = await start();
    return reply.sendMs;
  });
  if (!reply) throw new Error(`${pass}: no reply`);
  if (reply.status !== 201) throw new Error(`${pass} answered ${reply.status}: ${reply.body}`);
  // The client's own clock, without the thread hand-offs.
  result.seconds = reply.totalMs / 1000;
  result.megabytesPerSecond = bytes / MB / result.seconds;
  return { result, reply };
}

// ---------------------------------------------------------------------------------------------
// The bare server

/** Bare Fastify 5 (no logger, no hooks): a GET, a JSON POST, and raw-body uploads into a file. */
async function startBare(uploadDir: string): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify({ logger: false });
  app.get('/bare', () => ({ ok: true, service: 'bench' }));
  app.post('/bare', async (request, reply) => {
    const body = request.body;
    const items = isRecord(body) && Array.isArray(body.items) ? body.items.length : 0;
    return reply.code(201).send({ ok: true, items });
  });
  let uploads = 0;
  await app.register((scope, _options, done) => {
    scope.addContentTypeParser('*', (_request, payload, parsed) => parsed(null, payload));
    const receive = async (body: unknown, hashed: boolean) => {
      if (!(body instanceof Readable)) throw new Error('no raw body');
      const path = join(uploadDir, `bare-${uploads++}.part`);
      const hash = createHash('sha256');
      let bytes = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          bytes += chunk.length;
          if (hashed) hash.update(chunk);
          callback(null, chunk);
        },
      });
      await pipeline(body, meter, createWriteStream(path, { flags: 'wx' }));
      return { bytes, sha256: hashed ? hash.digest('hex') : null };
    };
    scope.post('/bare/upload', async (request, reply) =>
      reply.code(201).send(await receive(request.body, false)),
    );
    scope.post('/bare/upload-hashed', async (request, reply) =>
      reply.code(201).send(await receive(request.body, true)),
    );
    done();
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url };
}

// ---------------------------------------------------------------------------------------------
// Report

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

function mib(bytes: number): string {
  return fixed(bytes / MiB, 1);
}

function percent(ratio: number): string {
  return `${fixed(ratio * 100, 1)}%`;
}

interface Comparison {
  name: string;
  /** For request rates, the median of the alternating rounds' ratios (`rounds`). */
  ratio: number;
  target: number | null;
  rounds?: number[];
}

function verdict(c: Comparison): string {
  if (c.target === null) return 'no target';
  return `target ≥ ${percent(c.target)}: ${c.ratio >= c.target ? 'met' : 'NOT met'}`;
}

function rateTable(results: RouteResult[], comparisons: Comparison[]): string {
  return [
    '| Route | Requests/s (mean) | Latency mean (ms) | p50 (ms) | p99 (ms) | Requests measured |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.route} | ${fixed(r.requestsPerSecondMean, 0)} | ${fixed(r.latencyMeanMs, 2)} | ${r.latencyP50Ms} | ${r.latencyP99Ms} | ${r.totalRequests} |`,
    ),
    '',
    ...comparisons.map(
      (c) =>
        `- ${c.name}, median of ${c.rounds?.length ?? 1} alternating rounds (${(c.rounds ?? [c.ratio]).map((r) => fixed(r, 3)).join(', ')}): **${fixed(c.ratio, 3)}** (${percent(c.ratio)}); ${verdict(c)}.`,
    ),
  ].join('\n');
}

function passTable(passes: PassResult[]): string {
  return [
    '| Pass | Seconds | MB/s | CPU s | Main thread busy | RSS before (MiB) | RSS peak (MiB) | Peak delta (MiB) | Kernel peak (MiB) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...passes.map(
      (p) =>
        `| ${p.pass} | ${fixed(p.seconds, 2)} | ${fixed(p.megabytesPerSecond, 0)} | ${fixed(p.cpuSeconds, 2)} | ${percent(p.mainThreadUtilization)} | ${mib(p.memory.rssBeforeBytes)} | ${mib(p.memory.rssPeakBytes)} | ${mib(p.memory.rssDeltaBytes)} | ${p.memory.kernelPeakRssBytes === null ? 'n/a' : mib(p.memory.kernelPeakRssBytes)} |`,
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------

function loadAverage(): { '1m': number; '5m': number; '15m': number } {
  const [one = 0, five = 0, fifteen = 0] = os.loadavg();
  return { '1m': one, '5m': five, '15m': fifteen };
}

async function main(): Promise<void> {
  const workDir = await mkdtemp(join(tmpdir(), 'intake-bench-intakes-'));
  const dataDir = join(workDir, 'data');
  const filesDir = join(workDir, 'files');
  await mkdir(dataDir);
  await mkdir(filesDir);
  let bare: { app: FastifyInstance; url: string } | undefined;
  let service: RunningServer | undefined;
  const cleanup = cleanupOnce(async () => {
    await bare?.app.close();
    await service?.stop();
    await rm(workDir, { recursive: true, force: true });
  });
  const stopHandlingSignals = cleanUpOnSignals('service');

  try {
    const loadAtStart = loadAverage();
    process.stderr.write(
      `Node ${process.version}, ${availableParallelism()} cores, load average ${fixed(loadAtStart['1m'], 2)}; ` +
        `${CONNECTIONS} connections, ${ROUNDS} alternating rounds of warmup ${WARMUP_SECONDS} s + measured ${MEASURE_SECONDS} s per route; ` +
        `upload ${UPLOAD_BYTES} bytes of ${UPLOAD_CONTENT} content\n`,
    );
    bare = await startBare(filesDir);
    service = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'warn' }));
    const db = service.services.db.kysely;
    const account = await createAccount(
      db,
      { email: 'bench-intakes@example.com', plan: 'agency', rateLimitPerHour: RATE_LIMIT_PER_HOUR },
      new Date().toISOString(),
    );
    if (!account.test_key.startsWith('svc_test_')) {
      throw new Error(`Expected a svc_test_ key, got ${account.test_key.slice(0, 9)}…`);
    }
    const auth = { authorization: `Bearer ${account.test_key}` };
    const json = { 'content-type': 'application/json' };

    // Request rates.
    const bareGet: Target = {
      route: 'GET /bare (bare Fastify)',
      url: `${bare.url}/bare`,
      method: 'GET',
      headers: {},
    };
    const barePost: Target = {
      route: 'POST /bare (bare Fastify, same JSON body)',
      url: `${bare.url}/bare`,
      method: 'POST',
      headers: json,
      body: INTAKE_BODY_JSON,
    };
    const createTarget: Target = {
      route: 'POST /v1/intakes (4 items, test key)',
      url: `${service.url}/v1/intakes`,
      method: 'POST',
      headers: { ...auth, ...json },
      body: INTAKE_BODY_JSON,
    };
    const statusIntake = await call(createTarget, 201);
    const statusIntakeId = stringField(statusIntake, 'intake_id');
    const statusTarget: Target = {
      route: 'GET /v1/intakes/:id/status (test key)',
      url: `${service.url}/v1/intakes/${statusIntakeId}/status`,
      method: 'GET',
      headers: auth,
    };
    await call(statusTarget, 200);
    await call(barePost, 201);

    const intakesBefore = await countIntakes(service);
    const creations = await measurePair(barePost, createTarget);
    const barePostResult = creations.baseline;
    const createResult = creations.target;
    const created = (await countIntakes(service)) - intakesBefore;
    const answered = createResult.warmupRequests + createResult.totalRequests;
    // Every 2xx was an intake in the database (requests cut off at the end may add a few more).
    if (created < answered)
      throw new Error(`${answered} creations answered 201 but ${created} intakes exist`);
    const statusReads = await measurePair(bareGet, statusTarget);
    const coldStatusReads = await withEveryReadAfterACommit(service, () =>
      measurePair(bareGet, {
        ...statusTarget,
        route: 'GET /v1/intakes/:id/status, every read after a commit (cold)',
      }),
    );
    const rateResults = [
      barePostResult,
      createResult,
      statusReads.baseline,
      statusReads.target,
      coldStatusReads.baseline,
      coldStatusReads.target,
    ];
    const rateComparisons: Comparison[] = [
      { name: 'Creations / bare POST', ratio: creations.ratio, target: null, rounds: creations.roundRatios },
      {
        name: 'Status reads / bare GET',
        ratio: statusReads.ratio,
        target: READ_TARGET_RATIO,
        rounds: statusReads.roundRatios,
      },
      {
        name: 'Cold status reads / bare GET',
        ratio: coldStatusReads.ratio,
        target: null,
        rounds: coldStatusReads.roundRatios,
      },
    ];
    const loadAfterRates = loadAverage();

    // Upload.
    const source = join(filesDir, 'source.bin');
    process.stderr.write(`Generating ${UPLOAD_BYTES} bytes … `);
    const generatedAt = performance.now();
    await generateSourceFile(source, UPLOAD_BYTES, UPLOAD_CONTENT);
    process.stderr.write(`${fixed((performance.now() - generatedAt) / 1000, 1)} s\n`);
    const copyTarget = join(filesDir, 'copy.bin');

    const copyFilePass = await timedPass('fs.copyFile', UPLOAD_BYTES, async () => {
      await copyFile(source, copyTarget);
      return undefined;
    });
    await rm(copyTarget);
    const streamCopyPass = await timedPass('Stream copy (read → write pipeline)', UPLOAD_BYTES, async () => {
      await pipeline(createReadStream(source), createWriteStream(copyTarget));
      return undefined;
    });
    await rm(copyTarget);
    let sourceSha256 = '';
    const hashPass = await timedPass('Read + SHA-256 (no write)', UPLOAD_BYTES, async () => {
      sourceSha256 = await sha256OfFile(source);
      return undefined;
    });
    const rawHeaders = { 'content-type': 'application/octet-stream', 'x-filename': 'footage.bin' };
    const bareUpload = await uploadPass(
      'HTTP raw body → file (bare Fastify)',
      `${bare.url}/bare/upload`,
      source,
      UPLOAD_BYTES,
      rawHeaders,
    );
    await removeBareUploads(filesDir);
    const bareHashedUpload = await uploadPass(
      'HTTP raw body → SHA-256 → file (bare Fastify)',
      `${bare.url}/bare/upload-hashed`,
      source,
      UPLOAD_BYTES,
      rawHeaders,
    );
    await removeBareUploads(filesDir);
    if (stringField(JSON.parse(bareHashedUpload.reply.body), 'sha256') !== sourceSha256) {
      throw new Error('The bare hashed upload saw other bytes than the source file');
    }

    const uploadIntakeId = stringField(await call(createTarget, 201), 'intake_id');
    const serviceUpload = await uploadPass(
      'POST /portal/api/:id/items/:key/files (service)',
      `${service.url}/portal/api/${uploadIntakeId}/items/${UPLOAD_ITEM_KEY}/files`,
      source,
      UPLOAD_BYTES,
      rawHeaders,
    );
    const uploaded = JSON.parse(serviceUpload.reply.body) as unknown;
    const stored = await db
      .selectFrom('item_files')
      .select(['size', 'sha256', 'storage_key'])
      .where('id', '=', stringField(uploaded, 'file_id'))
      .executeTakeFirstOrThrow();
    if (Number(stored.size) !== UPLOAD_BYTES || stored.sha256 !== sourceSha256) {
      throw new Error(`The stored file does not match the source: ${JSON.stringify(stored)}`);
    }
    const storedSize = (await stat(join(dataDir, 'files', stored.storage_key))).size;
    if (storedSize !== UPLOAD_BYTES) throw new Error(`The stored file has ${storedSize} bytes`);
    await service.services.storage.delete(stored.storage_key);

    const passes = [
      copyFilePass,
      streamCopyPass,
      hashPass,
      bareUpload.result,
      bareHashedUpload.result,
      serviceUpload.result,
    ];
    const upload = serviceUpload.result;
    const versusCopyFile = upload.megabytesPerSecond / copyFilePass.megabytesPerSecond;
    const versusStreamCopy = upload.megabytesPerSecond / streamCopyPass.megabytesPerSecond;
    const uploadComparisons: Comparison[] = [
      { name: 'Upload / fs.copyFile', ratio: versusCopyFile, target: UPLOAD_TARGET_RATIO },
      { name: 'Upload / stream copy', ratio: versusStreamCopy, target: UPLOAD_TARGET_RATIO },
      {
        name: 'Upload / bare Fastify raw body → file',
        ratio: upload.megabytesPerSecond / bareUpload.result.megabytesPerSecond,
        target: null,
      },
    ];
    const memoryShare = upload.memory.rssDeltaBytes / UPLOAD_BYTES;
    const memoryMet = memoryShare < UPLOAD_MEMORY_TARGET_SHARE;
    const loadAtEnd = loadAverage();

    process.stdout.write(`\n### Request rates\n\n${rateTable(rateResults, rateComparisons)}\n\n`);
    process.stdout.write(
      `### Upload of ${UPLOAD_BYTES} bytes (${mib(UPLOAD_BYTES)} MiB) of ${UPLOAD_CONTENT} content; MB = 10^6 bytes\n\n${passTable(passes)}\n\n` +
        uploadComparisons
          .map((c) => `- ${c.name}: **${fixed(c.ratio, 3)}** (${percent(c.ratio)}); ${verdict(c)}.`)
          .join('\n') +
        `\n- Service upload: client done sending after ${fixed(upload.sendSeconds ?? NaN, 2)} s, ` +
        `response ${fixed(upload.seconds - (upload.sendSeconds ?? NaN), 2)} s later.\n` +
        `- Peak RSS delta during the upload: ${mib(upload.memory.rssDeltaBytes)} MiB = ${percent(memoryShare)} of the file; ` +
        `target < ${percent(UPLOAD_MEMORY_TARGET_SHARE)}: ${memoryMet ? 'met' : 'NOT met'}.\n` +
        `- Load average (1m/5m/15m): start ${formatLoad(loadAtStart)}, after the request rates ${formatLoad(loadAfterRates)}, end ${formatLoad(loadAtEnd)}.\n\n`,
    );
    const summary = {
      node: process.version,
      cores: availableParallelism(),
      loadAverage: { start: loadAtStart, afterRequestRates: loadAfterRates, end: loadAtEnd },
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      measuredSeconds: MEASURE_SECONDS,
      intakeBodyBytes: Buffer.byteLength(INTAKE_BODY_JSON),
      requestRates: { results: rateResults, comparisons: rateComparisons },
      upload: {
        bytes: UPLOAD_BYTES,
        content: UPLOAD_CONTENT,
        sha256: sourceSha256,
        rssSampleMs: RSS_SAMPLE_MS,
        passes,
        comparisons: uploadComparisons,
        throughputTarget: UPLOAD_TARGET_RATIO,
        throughputTargetMet: {
          versusCopyFile: versusCopyFile >= UPLOAD_TARGET_RATIO,
          versusStreamCopy: versusStreamCopy >= UPLOAD_TARGET_RATIO,
        },
        memoryShareOfFile: memoryShare,
        memoryTarget: UPLOAD_MEMORY_TARGET_SHARE,
        memoryTargetMet: memoryMet,
      },
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await cleanup();
    stopHandlingSignals();
  }
}

/** The bare upload routes leave their files behind, so that deleting them is not timed. */
async function removeBareUploads(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith('bare-')) await rm(join(dir, name), { force: true });
  }
}

function formatLoad(load: { '1m': number; '5m': number; '15m': number }): string {
  return `${fixed(load['1m'], 2)}/${fixed(load['5m'], 2)}/${fixed(load['15m'], 2)}`;
}

async function countIntakes(service: RunningServer): Promise<number> {
  const row = await service.services.db.kysely
    .selectFrom('intakes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

main().catch((error: unknown) => {
  process.stderr.write(`\nBenchmark failed: ${toError(error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
