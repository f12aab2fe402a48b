/**
 * One read, cold, under load, for a CPU profile of the service (see bench/README.md, "Cold reads and the
 * write path"): starts the service on SQLite in a temporary directory (as bench/run.ts does), creates
 * the intakes bench/run.ts reads, makes every read cold (bench/cold.ts) and loads the read named by
 * BENCH_READ (account, list, intake or status; default status; or create: `POST /v1/intakes` with one
 * item, sent, the quota set back to zero every 100 ms as in bench/writes.ts) with autocannon for BENCH_SECONDS
 * (default 10), and prints the requests/s and the main thread's CPU time per request. BENCH_READ=bare loads
 * instead the reads' baseline (bench/run.ts's bare Fastify route, started in this process). With BENCH_PROFILE=<file> the main thread is profiled
 * during the measured run only (not the start-up) and the profile written there (Chrome's
 * .cpuprofile format); with BENCH_STATEMENTS=1 it prints instead the SQL statements one cold read
 * runs, by kind, and the time spent inside them per read (the mean of 2,000 reads one after another),
 * and loads nothing. BENCH_PASS=polled loads the read as agents poll it instead (nothing
 * committed between reads, If-None-Match with the answer's ETag: 304), as bench/run.ts's polled pass;
 * BENCH_PASS=elsewhere polls it so with a commit before every read that changes nothing of this account
 * (another account's writes, this account's jobs), as bench/run.ts's elsewhere pass.
 *
 *   BENCH_READ=status BENCH_PROFILE=status.cpuprofile npx tsx bench/profile-read.ts
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { destination } from 'pino';
import { loadConfig } from '../src/config.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer } from '../src/server.js';
import { startCpuProfile } from './cpu-profile.js';
import { withEveryReadAfterACommit } from './cold.js';
import { INTAKE_BODY } from './intake-body.js';
import { call, measure, startBare, stringField, toError, type Target } from './load.js';
import { countStatements } from './statements.js';

/** Reads one after another whose statements are timed (BENCH_STATEMENTS=1), after a fifth as many to warm. */
const STATEMENT_READS = 2_000;

const READS = {
  account: () => '/v1/account',
  list: () => '/v1/intakes',
  intake: (id: string) => `/v1/intakes/${id}`,
  status: (id: string) => `/v1/intakes/${id}/status`,
} as const;

async function main(): Promise<void> {
  const read = process.env.BENCH_READ || 'status';
  if (!(read in READS) && read !== 'create' && read !== 'bare')
    throw new Error(`BENCH_READ: one of ${Object.keys(READS).join(', ')}, create or bare`);
  const pass = process.env.BENCH_PASS || 'cold';
  if (pass !== 'cold' && pass !== 'polled' && pass !== 'elsewhere')
    throw new Error('BENCH_PASS: cold, polled or elsewhere');
  if (pass !== 'cold' && (read === 'create' || read === 'bare'))
    throw new Error(`BENCH_PASS=${pass}: a read of the service, not create or bare`);
  const counter = process.env.BENCH_STATEMENTS === '1' ? countStatements() : undefined;
  const profile = process.env.BENCH_PROFILE;
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-profile-'));
  const logStream = destination({ dest: join(dataDir, 'service.log'), sync: false });
  const service = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' }), {
    logStream,
  });
  let quota: NodeJS.Timeout | undefined;
  let bare: Awaited<ReturnType<typeof startBare>> | undefined;
  try {
    const account = await createAccount(
      service.services.db.kysely,
      { email: 'bench@example.com', plan: 'agency', rateLimitPerHour: 100_000_000 },
      new Date().toISOString(),
    );
    const headers = { authorization: `Bearer ${account.live_key}` };
    const creation = (body: object): Target => ({
      route: 'POST /v1/intakes',
      url: `${service.url}/v1/intakes`,
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    for (let i = 0; i < 25; i++) await call(creation({ ...INTAKE_BODY, send: false }), 201);
    const id = stringField(await call(creation(INTAKE_BODY), 201), 'intake_id');
    // The reads' baseline, in this process like the service: its CPU per request is the budget of a read.
    if (read === 'bare') bare = await startBare();
    const target: Target = bare
      ? { route: 'GET /bare (bare Fastify)', url: `${bare.url}/bare`, headers: {} }
      : read === 'create'
        ? {
            ...creation({ ...INTAKE_BODY, items: [INTAKE_BODY.items[1]] }),
            route: 'POST /v1/intakes (one item)',
          }
        : {
            route: `GET ${READS[read as keyof typeof READS](id)}`,
            url: `${service.url}${READS[read as keyof typeof READS](id)}`,
            headers,
          };
    // Live creations count against the plan's monthly quota: set back to zero every 100 ms (as bench/writes.ts).
    const db = service.services.db.kysely;
    quota =
      read !== 'create'
        ? undefined
        : setInterval(
            () =>
              void db
                .updateTable('usage_counters')
                .set({ value: 0 })
                .where('account_id', '=', account.account_id)
                .execute(),
            100,
          );
    const run = async () => {
      const expected = target.status ?? (read === 'create' ? 201 : 200);
      await call(target, expected);
      if (counter) {
        counter.reset();
        await call(target, expected);
        const kinds = [...counter.byKind().entries()].map(([kind, n]) => `${n} × ${kind}`);
        process.stdout.write(`${target.route}: ${counter.total()} statements ${pass}: ${kinds.join(', ')}\n`);
        // The time inside those statements, per read: a floor under the read's time that no code of the
        // service's can lower (SQLite's work and the conversion of its rows), against the bare route's.
        for (let warm = 0; warm < STATEMENT_READS / 5; warm++) await call(target, expected);
        counter.reset();
        for (let timed = 0; timed < STATEMENT_READS; timed++) await call(target, expected);
        const perRead = counter.nanoseconds() / 1_000 / STATEMENT_READS;
        const byKind = [...counter.nanosecondsByKind()].map(
          ([kind, ns]) => `${kind} ${(ns / 1_000 / STATEMENT_READS).toFixed(1)}`,
        );
        process.stdout.write(
          `${target.route}: ${perRead.toFixed(1)} µs in statements per read ${pass} (mean of ${STATEMENT_READS}): ${byKind.join(', ')}\n`,
        );
        return;
      }
      const profiler = profile ? await startCpuProfile(profile) : undefined;
      const before = await mainThreadCpuNs();
      const result = await measure(target);
      const after = await mainThreadCpuNs();
      await profiler?.stop();
      // Warm-up and measured requests alike ran on the main thread between the two readings.
      const answered = result.totalRequests + result.warmupRequests;
      const perRequest =
        before === undefined || after === undefined
          ? ''
          : `, main thread ${((after - before) / 1_000 / answered).toFixed(1)} µs of CPU per request`;
      process.stdout.write(
        `${result.requestsPerSecondMean.toFixed(0)} requests/s, p99 ${result.latencyP99Ms} ms${perRequest}\n`,
      );
    };
    if (pass === 'cold') await withEveryReadAfterACommit(service, run);
    else {
      // The answer's ETag, sent back as a polling agent does: every answer is a 304 from the kept one.
      const first = await fetch(target.url, { headers: target.headers });
      await first.arrayBuffer();
      const etag = first.headers.get('etag');
      if (!etag) throw new Error(`${target.route}: no ETag to poll with`);
      target.headers = { ...target.headers, 'if-none-match': etag };
      target.status = 304;
      if (pass === 'polled') await run();
      else await withEveryReadAfterACommit(service, run, false);
    }
  } finally {
    clearInterval(quota);
    await bare?.app.close();
    await service.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * The main thread's time on a CPU so far, in nanoseconds (Linux: the first field of its schedstat), where
 * the servers answer; autocannon runs in a worker thread of its own. Undefined elsewhere. Unlike requests
 * per second, it does not move with what else the machine is doing.
 */
async function mainThreadCpuNs(): Promise<number | undefined> {
  const schedstat = await readFile(`/proc/self/task/${process.pid}/schedstat`, 'utf8').catch(() => '');
  const nanoseconds = Number(schedstat.split(' ')[0]);
  return schedstat !== '' && Number.isFinite(nanoseconds) ? nanoseconds : undefined;
}

main().catch((error: unknown) => {
  process.stderr.write(`${toError(error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
