/**
 * The write path (see bench/README.md, "Intake creation"): requests/s of `POST /v1/intakes` (one item,
 * sent, live key, the service in its `api` role: jobs are left to workers) against a bare Fastify route that parses the same body and writes, in one SQLite
 * transaction (WAL, synchronous NORMAL, prepared statements), the intake, its item, an event, two jobs
 * and an audit row into the same schema. Alternating rounds; the ratio is their median. Also counts the
 * SQL statements one creation runs (its request and the jobs it leaves, run by the worker), by kind.
 *
 * Environment: BENCH_SECONDS (default 10), BENCH_WARMUP_SECONDS (default 2), BENCH_CONNECTIONS
 * (default 10), BENCH_ROUNDS (default 3; the three shorter with BENCH_QUICK=1, see bench/load.ts),
 * BENCH_LOG_LEVEL (the service's, default info).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os, { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import { destination } from 'pino';
import { loadConfig } from '../src/config.js';
import { migrateToLatest, openDatabase } from '../src/db/database.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { startServer, type RunningServer } from '../src/server.js';
import { printGoalLines, ratioGoal } from './goal-lines.js';
import { INTAKE_BODY } from './intake-body.js';
import {
  call,
  CONNECTIONS,
  MEASURE_SECONDS,
  measurePair,
  ROUNDS,
  toError,
  WARMUP_SECONDS,
  type Target,
} from './load.js';
import { cleanUpOnSignals, cleanupOnce } from './processes.js';
import { countStatements } from './statements.js';

const RATE_LIMIT_PER_HOUR = 100_000_000;
const TARGET_RATIO = 0.25;
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info';
/** Creations whose statements are counted (after a warmup, the worker's jobs drained). */
const COUNTED_CREATIONS = 50;

/** One item, sent: the creation the issue measures. */
const ONE_ITEM_BODY = JSON.stringify({ ...INTAKE_BODY, items: [INTAKE_BODY.items[1]] });

interface CreationBody {
  project_name: string;
  client: { email: string; name?: string; language?: string };
  due_date?: string;
  client_brief?: string;
  items: { key: string; label: string; type: string }[];
}

/**
 * The baseline: the same body parsed, and the rows a creation needs written in one transaction with
 * prepared statements, into a database migrated like the service's (its indexes and foreign keys).
 */
async function startBareInsert(dir: string): Promise<{ app: FastifyInstance; url: string; close(): void }> {
  const migrated = openDatabase({ databaseUrl: undefined, dataDir: dir });
  await migrateToLatest(migrated);
  const account = await createAccount(
    migrated.kysely,
    { email: 'bare@example.com', plan: 'agency' },
    new Date().toISOString(),
  );
  await migrated.close();
  const sqlite = new SQLite(join(dir, 'intake.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  const insertIntake = sqlite.prepare(
    `insert into intakes (id, account_id, livemode, project_name, client_email, client_name, client_language,
       status, chase_schedule, due_date, retention_mode, retention_days, retention_anonymize, client_brief,
       created_at, updated_at, sent_at)
     values (?, ?, 0, ?, ?, ?, ?, 'sent', 'default', ?, 'days', 90, 0, ?, ?, ?, ?)`,
  );
  const insertItem = sqlite.prepare(
    `insert into intake_items (intake_id, account_id, livemode, key, position, definition, status, created_at)
     values (?, ?, 0, ?, ?, ?, 'pending', ?)`,
  );
  const insertEvent = sqlite.prepare(
    `insert into events (id, account_id, livemode, type, intake_id, payload, occurred_at)
     values (?, ?, 0, 'intake.sent', ?, ?, ?)`,
  );
  const insertJob = sqlite.prepare(
    `insert into jobs (id, account_id, livemode, kind, subject_id, payload, due_at, created_at)
     values (?, ?, 0, ?, ?, ?, ?, ?)`,
  );
  const insertAudit = sqlite.prepare(
    `insert into audit_entries (id, account_id, livemode, action, resource_type, resource_id, actor_type,
       actor_id, request_id, created_at)
     values (?, ?, 0, 'intake.create', 'intake', ?, 'api_key', 'key_bare', ?, ?)`,
  );
  const create = sqlite.transaction((body: CreationBody, requestId: string) => {
    const id = `in_${randomUUID().replaceAll('-', '')}`;
    const at = new Date().toISOString();
    const accountId = account.account_id;
    insertIntake.run(
      id,
      accountId,
      body.project_name,
      body.client.email.toLowerCase(),
      body.client.name ?? null,
      body.client.language ?? 'en',
      body.due_date ?? null,
      body.client_brief ?? null,
      at,
      at,
      at,
    );
    body.items.forEach((item, position) =>
      insertItem.run(id, accountId, item.key, position, JSON.stringify(item), at),
    );
    const payload = JSON.stringify({ intake_id: id, project_name: body.project_name });
    insertEvent.run(`evt_${randomUUID()}`, accountId, id, payload, at);
    insertJob.run(`job_${randomUUID()}`, accountId, 'webhook.fanout', id, payload, Date.now(), at);
    insertJob.run(`job_${randomUUID()}`, accountId, 'intake.invite', id, payload, Date.now(), at);
    insertAudit.run(`aud_${randomUUID()}`, accountId, id, requestId, at);
    return id;
  });
  const app = Fastify({ logger: false });
  app.post('/bare', (request, reply) => {
    const id = create(request.body as CreationBody, request.id);
    return reply.code(201).send({ intake_id: id, status: 'sent' });
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url, close: () => sqlite.close() };
}

/** Waits until the worker has run every job that is due (the invitation, the fan-out). */
async function drainJobs(service: RunningServer): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const row = await service.services.db.kysely
      .selectFrom('jobs')
      .select((eb) => eb.fn.countAll<number>().as('due'))
      .where('due_at', '<=', Date.now())
      .executeTakeFirstOrThrow();
    if (Number(row.due) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('The worker did not run the due jobs within 10 s');
}

async function main(): Promise<void> {
  const workDir = await mkdtemp(join(tmpdir(), 'intake-bench-writes-'));
  const bareDir = join(workDir, 'bare');
  await mkdir(bareDir);
  let bare: Awaited<ReturnType<typeof startBareInsert>> | undefined;
  let service: RunningServer | undefined;
  let stopQuotaReset = (): void => undefined;
  const cleanup = cleanupOnce(async () => {
    stopQuotaReset();
    await bare?.app.close();
    bare?.close();
    await service?.stop();
    await rm(workDir, { recursive: true, force: true });
  });
  const stopHandlingSignals = cleanUpOnSignals('service');
  try {
    const counter = countStatements();
    bare = await startBareInsert(bareDir);
    const logStream = destination({ dest: join(workDir, 'service.log'), sync: false });
    service = await startServer(loadConfig({ PORT: '0', DATA_DIR: join(workDir, 'data'), LOG_LEVEL }), {
      logStream,
    });
    const account = await createAccount(
      service.services.db.kysely,
      { email: 'bench-writes@example.com', plan: 'agency', rateLimitPerHour: RATE_LIMIT_PER_HOUR },
      new Date().toISOString(),
    );
    const json = { 'content-type': 'application/json' };
    const bareTarget: Target = {
      route: 'POST /bare (same body; intake, item, event, 2 jobs, audit in one transaction)',
      url: `${bare.url}/bare`,
      method: 'POST',
      headers: json,
      body: ONE_ITEM_BODY,
    };
    const createTarget: Target = {
      route: 'POST /v1/intakes (one item, sent, live key)',
      url: `${service.url}/v1/intakes`,
      method: 'POST',
      headers: { ...json, authorization: `Bearer ${account.live_key}` },
      body: ONE_ITEM_BODY,
    };

    // Live creations count against the plan's monthly quota (1,000 on agency); the bench sets the
    // account's counters back to zero every 100 ms so that the quota check runs but never refuses.
    const db = service.services.db.kysely;
    const resetQuota = () =>
      db
        .updateTable('usage_counters')
        .set({ value: 0 })
        .where('account_id', '=', account.account_id)
        .execute();
    const quotaTimer = setInterval(() => void resetQuota(), 100);
    stopQuotaReset = () => clearInterval(quotaTimer);

    // Statements per creation: the request's own, then the jobs it leaves (run by a worker).
    for (let i = 0; i < 5; i++) await call(createTarget, 201);
    service.worker.start();
    await drainJobs(service);
    await service.worker.stop();
    counter.reset();
    for (let i = 0; i < COUNTED_CREATIONS; i++) await call(createTarget, 201);
    const inRequest = counter.byKind();
    counter.reset();
    service.worker.start();
    await drainJobs(service);
    await service.worker.stop();
    const inJobs = counter.byKind();
    // The quota reset's own statements are not the creation's.
    for (const counts of [inRequest, inJobs]) counts.delete('update usage_counters');
    const perCreation = (counts: Map<string, number>) =>
      [...counts.entries()]
        .map(([kind, count]) => ({ kind, perCreation: count / COUNTED_CREATIONS }))
        .sort((a, b) => b.perCreation - a.perCreation);
    const sum = (counts: Map<string, number>) =>
      [...counts.values()].reduce((a, b) => a + b, 0) / COUNTED_CREATIONS;

    process.stderr.write(
      `Node ${process.version}, ${availableParallelism()} cores, load average ${(os.loadavg()[0] ?? 0).toFixed(2)}; ` +
        `service log level ${LOG_LEVEL}; ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ` +
        `warmup ${WARMUP_SECONDS} s + measured ${MEASURE_SECONDS} s per route\n`,
    );
    const pair = await measurePair(bareTarget, createTarget);

    const lines = [
      '| Route | Requests/s (mean) | p50 (ms) | p99 (ms) |',
      '| --- | ---: | ---: | ---: |',
      ...[pair.baseline, pair.target].map(
        (r) =>
          `| ${r.route} | ${r.requestsPerSecondMean.toFixed(0)} | ${r.latencyP50Ms} | ${r.latencyP99Ms} |`,
      ),
      '',
      `Creations ÷ bare transactional insert, rounds ${pair.roundRatios.map((r) => r.toFixed(3)).join(', ')}; ` +
        `median **${pair.ratio.toFixed(3)}** (target ≥ ${TARGET_RATIO}: ${pair.ratio >= TARGET_RATIO ? 'met' : 'NOT met'})`,
      '',
      `SQL statements per creation (mean of ${COUNTED_CREATIONS}, one at a time): ${sum(inRequest).toFixed(1)} in the request, ` +
        `${sum(inJobs).toFixed(1)} in the jobs it leaves`,
      '',
      '| Where | Statement | Per creation |',
      '| --- | --- | ---: |',
      ...perCreation(inRequest).map((s) => `| request | ${s.kind} | ${s.perCreation.toFixed(2)} |`),
      ...perCreation(inJobs).map((s) => `| jobs | ${s.kind} | ${s.perCreation.toFixed(2)} |`),
    ];
    process.stdout.write(`\n${lines.join('\n')}\n\n`);
    process.stdout.write(
      `${JSON.stringify(
        {
          node: process.version,
          loadAverage1m: os.loadavg()[0],
          statements: {
            inRequest: sum(inRequest),
            inJobs: sum(inJobs),
            request: perCreation(inRequest),
            jobs: perCreation(inJobs),
          },
          pair,
        },
        null,
        2,
      )}\n`,
    );
    printGoalLines([
      ratioGoal('writes.intake_create', `>=${TARGET_RATIO}`, 'bare transactional insert route', pair),
    ]);
  } finally {
    await cleanup();
    stopHandlingSignals();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`\nBenchmark failed: ${toError(error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
