import { createServer, connect, type AddressInfo } from 'node:net';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/schema.js';
import { defineJob, enqueueJob, type NewJob } from '../src/jobs/jobs.js';
import { listenForDueJobs, onLocalJobDue, onLocalJobWrite } from '../src/jobs/wakeup.js';
import { Worker } from '../src/jobs/worker.js';
import { systemClock } from '../src/lib/clock.js';
import { serviceAvailable, TEST_POSTGRES_URL } from './helpers/env.js';
import { eventually } from './helpers/receivers.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Wake-ups: a job enqueued due now reaches an idle worker long before its next poll (here a minute
 * away): on PostgreSQL through LISTEN/NOTIFY, on SQLite within the process (the embedded `serve`).
 * And JOB_LEASE_MS: how soon a crashed worker's claim may be taken over.
 */
const Ping = defineJob('test_wakeup.ping', z.strictObject({ n: z.number().int() }), { testOnly: true });
const LocalPing = defineJob('test_wakeup.local_ping', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
});
const BurstPing = defineJob('test_wakeup.burst_ping', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
});
const ready = await serviceAvailable('postgres');

type PingKind = typeof Ping;

/** A job of one of the kinds above, due now, for the wake-up tests' account. */
function pingDueNow(kind: PingKind, subjectId: string, n: number): NewJob<{ n: number }> {
  return { accountId: 'acct_wakeup', livemode: true, kind, subjectId, payload: { n }, dueAt: Date.now() };
}

describe('job wake-ups on SQLite, in the process (the embedded serve)', () => {
  let server: TestServer;
  let worker: Worker;
  let unsubscribe: () => void;
  const ran: number[] = [];

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    worker = new Worker({
      db: server.server.services.db,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      pollIntervalMs: 60_000,
    });
    worker.register(LocalPing, (job) => {
      ran.push(job.payload.n);
      return Promise.resolve();
    });
    worker.start();
    unsubscribe = onLocalJobDue(server.server.services.db.kysely, () => worker.nudge());
    // The first poll (at start) found nothing; the next one is a minute away.
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
  afterAll(async () => {
    unsubscribe?.();
    await worker?.stop();
    await server?.stop();
  });

  const job = (n: number) => pingDueNow(LocalPing, `local${n}`, n);

  it('runs a job due now right after its commit, not before, without waiting for the poll', async () => {
    const db = server.server.services.db.kysely;
    await db.transaction().execute(async (trx) => {
      await enqueueJob(trx, job(1));
      // Woken already, the worker's claim waits for the connection this transaction holds.
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(ran).toEqual([]);
    });
    await eventually(
      () => Promise.resolve(ran.includes(1) ? true : undefined),
      'the woken worker to run job 1',
      5_000,
    );
    await enqueueJob(db, job(2));
    await eventually(
      () => Promise.resolve(ran.includes(2) ? true : undefined),
      'the woken worker to run job 2',
      5_000,
    );
    expect(ran).toEqual([1, 2]);
  });

  it.each([
    [0, 'a claim for most jobs', 8, 30],
    [500, 'the first job claimed at once, the rest together once the spacing has passed', 2, 3],
  ])('claims a burst of wake-ups with spacing %i ms: %s', async (spacing, _what, least, most) => {
    const spaced = new Worker({
      db: server.server.services.db,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      pollIntervalMs: 60_000,
      nudgeSpacingMs: spacing,
      // Room for the whole burst in one claim: no claims for a backlog.
      concurrency: 40,
      batchSize: 40,
    });
    const burst: number[] = [];
    spaced.register(BurstPing, (job) => {
      burst.push(job.payload.n);
      return Promise.resolve();
    });
    spaced.start();
    const stopWaking = onLocalJobDue(server.server.services.db.kysely, () => spaced.nudge());
    try {
      // Its first poll (at start) finds nothing; a quiet spell longer than the spacing follows.
      await new Promise((resolve) => setTimeout(resolve, spacing + 100));
      const before = spaced.pollClaims();
      // Thirty jobs, each committed on its own and each waking the worker, as thirty requests would
      // (all within the 500 ms spacing: a few milliseconds each).
      const db = server.server.services.db.kysely;
      for (let n = 0; n < 30; n++) {
        await enqueueJob(db, pingDueNow(BurstPing, `burst${spacing}/${n}`, n));
      }
      await eventually(
        () => Promise.resolve(burst.length === 30 ? true : undefined),
        'the woken worker to run the thirty jobs',
        5_000,
      );
      expect(burst.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
      const claims = spaced.pollClaims() - before;
      expect(claims).toBeGreaterThanOrEqual(least);
      expect(claims).toBeLessThanOrEqual(most);
    } finally {
      stopWaking();
      await spaced.stop();
    }
  });

  it('wakes for nothing after a rollback, and runs what comes next', async () => {
    const db = server.server.services.db.kysely;
    await expect(
      db.transaction().execute(async (trx) => {
        await enqueueJob(trx, job(3));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await enqueueJob(db, job(4));
    await eventually(
      () => Promise.resolve(ran.includes(4) ? true : undefined),
      'the woken worker to run job 4',
      5_000,
    );
    expect(ran).toEqual([1, 2, 4]);
  });
});

const TakenPing = defineJob('test_wakeup.taken_ping', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
});
/** One at a time per key, and one more of a key claimed ahead: a worker holds at most two of a key. */
const KeyedPing = defineJob('test_wakeup.keyed_ping', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  keyConcurrency: 1,
  keyPrefetch: 1,
});
/** One at a time per key, none claimed ahead. */
const SingleKeyPing = defineJob('test_wakeup.single_key_ping', z.strictObject({ n: z.number().int() }), {
  testOnly: true,
  keyConcurrency: 1,
  keyPrefetch: 0,
});

describe('jobs taken by the worker as they are written, on SQLite (the embedded serve)', () => {
  let server: TestServer;
  let db: Kysely<Database>;
  const started: number[] = [];
  /** Handlers of these payloads wait until their gate is opened. */
  const gates = new Map<number, { opened: Promise<void>; open: () => void }>();
  const gate = (n: number) => {
    let open: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (open = resolve));
    gates.set(n, { opened, open });
  };
  const openGate = (n: number) => gates.get(n)?.open();
  /** Stops the test's worker (takingWorker), after the test whatever its outcome. */
  let stopWorker: (() => Promise<void>) | undefined;

  /** A worker polling once a minute, offered the jobs this process writes; woken only if `wakes`. */
  function takingWorker(concurrency: number, wakes = false) {
    const worker = new Worker({
      db: server.server.services.db,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      pollIntervalMs: 60_000,
      concurrency,
    });
    for (const kind of [TakenPing, KeyedPing, SingleKeyPing]) {
      worker.register(kind, async (job) => {
        started.push(job.payload.n);
        await gates.get(job.payload.n)?.opened;
      });
    }
    worker.start();
    const stopTaking = onLocalJobWrite(db, (offered) => worker.takeAtWrite(offered));
    const stopWaking = wakes ? onLocalJobDue(db, () => worker.nudge()) : () => true;
    const stop = async () => {
      stopTaking();
      stopWaking();
      await worker.stop();
    };
    stopWorker = stop;
    return { worker, stop };
  }
  const job = (n: number, uniqueKey?: string): NewJob<{ n: number }> => ({
    ...pingDueNow(TakenPing, `taken${n}`, n),
    ...(uniqueKey ? { uniqueKey } : {}),
  });
  const keyed = (n: number, kind: PingKind = KeyedPing): NewJob<{ n: number }> => ({
    ...pingDueNow(kind, `keyed${n}`, n),
    concurrencyKey: 'receiver',
  });
  const rowOf = (id: string) => db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  const hasStarted = (n: number) => () => Promise.resolve(started.includes(n) ? true : undefined);
  /** Writes job `n` (by default a TakenPing) and waits until it runs, held there until its gate opens. */
  const startHeld = async (n: number, written: NewJob<{ n: number }> = job(n)) => {
    gate(n);
    await enqueueJob(db, written);
    await eventually(hasStarted(n), `the worker to start job ${n}`, 5_000);
  };
  /** The first poll (at start) found nothing; the next one is a minute away. */
  const afterFirstPoll = () => new Promise((resolve) => setTimeout(resolve, 100));

  beforeAll(async () => {
    server = await startTestServer('sqlite');
    db = server.server.services.db.kysely;
  });
  afterEach(async () => {
    for (const n of gates.keys()) openGate(n);
    await stopWorker?.();
    stopWorker = undefined;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('writes a job due now with the lease of a worker that has room, and runs it after the commit without a claim', async () => {
    const { worker } = takingWorker(2);
    await afterFirstPoll();
    const claims = worker.pollClaims();
    let id = '';
    await db.transaction().execute(async (trx) => {
      id = await enqueueJob(trx, job(1));
      const row = await trx.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      // Claimed as written: its first attempt counted, a lease no other worker passes.
      expect(row.attempts).toBe(1);
      expect(row.locked_until).toBeGreaterThan(Date.now());
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(started).toEqual([]);
    });
    // No wake-up reaches this worker and its next poll is a minute away: only the hand-over runs it.
    await eventually(hasStarted(1), 'the worker to run job 1', 5_000);
    await eventually(async () => ((await rowOf(id)) ? undefined : true), 'job 1 to end', 5_000);
    expect(worker.pollClaims()).toBe(claims);
    expect(worker.takenAtWrite()).toBe(1);
  });

  it('gives the slot back after a rollback: nothing runs, and the next job is taken', async () => {
    const { worker } = takingWorker(1);
    await afterFirstPoll();
    await expect(
      db.transaction().execute(async (trx) => {
        await enqueueJob(trx, job(2));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    // The worker reads the job back once the transaction has ended: then it knows.
    await worker.whenSettled({ accountId: 'acct_wakeup', livemode: true });
    // One slot: held still by the rolled-back job, job 3 would wait for the poll a minute away.
    await enqueueJob(db, job(3));
    await eventually(hasStarted(3), 'the worker to run job 3', 5_000);
    expect(started).not.toContain(2);
    expect(worker.takenAtWrite()).toBe(1);
  });

  it('writes a job unclaimed when no slot is free, for a claim to take when one frees', async () => {
    const { worker } = takingWorker(1, true);
    await afterFirstPoll();
    await startHeld(4);
    const claims = worker.pollClaims();
    await db.transaction().execute(async (trx) => {
      const id = await enqueueJob(trx, job(5));
      // Written unclaimed, for the claim the worker makes as its slot frees.
      const waiting = await trx.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
      expect(waiting?.locked_until).toBeNull();
      expect(waiting?.attempts).toBe(0);
    });
    openGate(4);
    await eventually(hasStarted(5), 'a claim to run job 5 once job 4 ended', 5_000);
    expect(worker.pollClaims()).toBeGreaterThan(claims);
    expect(worker.takenAtWrite()).toBe(1);
  });

  it('gives the slot back when a unique job is pending already: it runs once, and the next job is taken', async () => {
    const { worker } = takingWorker(2);
    gate(6);
    await afterFirstPoll();
    const first = await enqueueJob(db, job(6, 'taken-unique'));
    await eventually(hasStarted(6), 'the worker to start job 6', 5_000);
    // The second slot is offered and taken, but nothing is written: the key is pending.
    expect(await enqueueJob(db, job(7, 'taken-unique'))).toBe(first);
    await enqueueJob(db, job(8));
    await eventually(hasStarted(8), 'the worker to run job 8 in the slot given back', 5_000);
    openGate(6);
    expect(started).not.toContain(7);
    expect(worker.takenAtWrite()).toBe(2);
  });

  it('leaves jobs written while their key has no free slot to the claim that comes as it frees: one claim for them all, and no wake-up', async () => {
    const { worker } = takingWorker(4, true);
    gate(11);
    await afterFirstPoll();
    await startHeld(10, keyed(10));
    const claims = worker.pollClaims();
    // The key's one slot is busy: jobs 11 and 12 are written unclaimed, and their wake-ups make no claim.
    const second = await enqueueJob(db, keyed(11));
    // Due a few milliseconds later: a claim takes jobs in due order (then by id, which is random).
    await new Promise((resolve) => setTimeout(resolve, 5));
    const third = await enqueueJob(db, keyed(12));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(worker.pollClaims()).toBe(claims);
    expect((await rowOf(second))?.locked_until).toBeNull();
    expect((await rowOf(third))?.locked_until).toBeNull();
    // Job 10 ends: one claim takes both (the key's slot and one ahead), long before the next poll.
    openGate(10);
    await eventually(hasStarted(11), 'the claim as the slot frees to run job 11', 5_000);
    expect((await rowOf(third))?.locked_until).toBeGreaterThan(Date.now());
    expect(worker.pollClaims()).toBe(claims + 1);
    openGate(11);
    await eventually(hasStarted(12), 'the worker to run job 12, claimed ahead', 5_000);
    expect(worker.takenAtWrite()).toBe(1);
  });

  it("takes a job of another kind as it is written while one kind's jobs wait for a slot", async () => {
    const { worker } = takingWorker(4, true);
    await afterFirstPoll();
    await startHeld(15, keyed(15));
    const claims = worker.pollClaims();
    // Job 16 waits for the key's slot, left to the claim as it frees: a backlog of its kind only.
    await enqueueJob(db, keyed(16));
    await enqueueJob(db, job(17));
    await eventually(hasStarted(17), 'the worker to run job 17', 5_000);
    expect(worker.takenAtWrite()).toBe(2);
    expect(worker.pollClaims()).toBe(claims);
  });

  it('runs a job left to the claim as its slot frees even when no claim has run yet', async () => {
    const { worker } = takingWorker(4, true);
    await afterFirstPoll();
    const claims = worker.pollClaims();
    // Taken at its write: the worker holds the key's one slot, and nothing is claimed ahead.
    await startHeld(13, keyed(13, SingleKeyPing));
    const next = await enqueueJob(db, keyed(14, SingleKeyPing));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(worker.pollClaims()).toBe(claims);
    expect((await rowOf(next))?.locked_until).toBeNull();
    openGate(13);
    await eventually(hasStarted(14), 'the claim as the slot frees to run job 14', 5_000);
    expect(worker.pollClaims()).toBeGreaterThan(claims);
    expect(worker.takenAtWrite()).toBe(1);
  });

  it('hands a job back, unrun and its attempt uncounted, when the worker stops before the commit', async () => {
    const { worker, stop } = takingWorker(2);
    await afterFirstPoll();
    let id = '';
    let stopping: Promise<void> | undefined;
    await db.transaction().execute(async (trx) => {
      id = await enqueueJob(trx, job(9));
      stopping = stop();
      await new Promise((resolve) => setTimeout(resolve, 50));
    });
    await stopping;
    const row = await rowOf(id);
    await db.deleteFrom('jobs').where('id', '=', id).execute();
    expect(row?.locked_until).toBeNull();
    expect(row?.attempts).toBe(0);
    expect(started).not.toContain(9);
    expect(worker.takenAtWrite()).toBe(0);
  });
});

/** NotificationResponse messages ('A': length, process id, channel) on `channel` in a server's byte stream. */
function notifications(stream: Buffer, channel: string): number {
  let count = 0;
  for (let at = 0; at + 5 <= stream.length;) {
    const length = stream.readInt32BE(at + 1);
    if (stream[at] === 0x41) {
      const name = stream.subarray(at + 9, stream.indexOf(0, at + 9)).toString();
      if (name === channel) count++;
    }
    at += 1 + length;
  }
  return count;
}

describe.runIf(ready)('job wake-ups on PostgreSQL (LISTEN/NOTIFY)', () => {
  let server: TestServer;
  let worker: Worker;
  let stopListening: () => Promise<void>;
  const ran: number[] = [];

  beforeAll(async () => {
    server = await startTestServer('postgres');
    const db = server.server.services.db;
    worker = new Worker({
      db,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      pollIntervalMs: 60_000,
    });
    worker.register(Ping, (job) => {
      ran.push(job.payload.n);
      return Promise.resolve();
    });
    worker.start();
    const listener = listenForDueJobs(
      server.env.DATABASE_URL ?? '',
      () => worker.nudge(),
      pino({ level: 'silent' }),
    );
    stopListening = () => listener.close();
    await listener.ready;
    // The first poll (at start) found nothing; the next one is a minute away.
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
  afterAll(async () => {
    await stopListening?.();
    await worker?.stop();
    await server?.stop();
  });

  it('runs a job due now at its commit, without waiting for the poll', async () => {
    const db = server.server.services.db.kysely;
    const enqueue = (n: number) => enqueueJob(db, pingDueNow(Ping, `s${n}`, n));
    await db.transaction().execute((trx) => enqueueJob(trx, pingDueNow(Ping, 's1', 1)));
    await eventually(
      () => Promise.resolve(ran.includes(1) ? true : undefined),
      'the woken worker to run job 1',
      15_000,
    );
    // A second one, outside any transaction: wakes it again.
    await enqueue(2);
    await eventually(
      () => Promise.resolve(ran.includes(2) ? true : undefined),
      'the woken worker to run job 2',
      15_000,
    );
    expect(ran).toEqual([1, 2]);
  });

  it('notifies once per transaction, however many jobs fall due in it', async () => {
    const db = server.server.services.db.kysely;
    // Every statement the service's connections send, read as it goes out (the connections are real).
    const notifies: string[] = [];
    // eslint-disable-next-line @typescript-eslint/unbound-method -- put back as it was, and called with its own `this`
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
      if (text?.includes('pg_notify')) notifies.push(text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      await db.transaction().execute(async (trx) => {
        for (const n of [11, 12, 13]) await enqueueJob(trx, pingDueNow(Ping, `t${n}`, n));
      });
      expect(notifies).toHaveLength(1);
      await db.transaction().execute((trx) => enqueueJob(trx, pingDueNow(Ping, 't14', 14)));
      await enqueueJob(db, pingDueNow(Ping, 't15', 15));
      expect(notifies).toHaveLength(3);
    } finally {
      pg.Client.prototype.query = query;
    }
    await eventually(
      () => Promise.resolve([11, 12, 13, 14, 15].every((n) => ran.includes(n)) ? true : undefined),
      'the woken worker to run jobs 11 to 15',
      15_000,
    );
  });

  it("wakes only this installation's workers, not those of another schema in the same database", async () => {
    const own = new URL(server.env.DATABASE_URL ?? '');
    const other = new URL(own);
    other.searchParams.set('schema', `${own.searchParams.get('schema') ?? 'x'}_other`);
    const otherSchema = other.searchParams.get('schema') ?? '';
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    await admin.query(`create schema if not exists "${otherSchema}"`);
    const woken = { own: 0, other: 0 };
    const listeners = [
      listenForDueJobs(own.toString(), () => woken.own++, pino({ level: 'silent' })),
      listenForDueJobs(other.toString(), () => woken.other++, pino({ level: 'silent' })),
    ];
    try {
      await Promise.all(listeners.map((l) => l.ready));
      await enqueueJob(server.server.services.db.kysely, pingDueNow(Ping, 's3', 3));
      await eventually(() => Promise.resolve(woken.own > 0 ? true : undefined), 'the own wake-up', 15_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(woken.other).toBe(0);
    } finally {
      await Promise.all(listeners.map((l) => l.close()));
      await admin.query(`drop schema if exists "${otherSchema}" cascade`);
      await admin.end();
    }
  });

  it('reads LISTEN_DATABASE_URL with the schema of DATABASE_URL, for PostgreSQL only', () => {
    const dir = { DATA_DIR: server.dataDir };
    const database = 'postgres://app@pooler:6432/intake?schema=tenant_a&prepared_statements=false';
    const direct = 'postgres://app@db:5432/intake';
    expect(loadConfig({ ...dir, DATABASE_URL: database }).listenDatabaseUrl).toBe(database);
    expect(
      loadConfig({ ...dir, DATABASE_URL: database, LISTEN_DATABASE_URL: direct }).listenDatabaseUrl,
    ).toBe(`${direct}?schema=tenant_a`);
    const own = `${direct}?schema=tenant_b`;
    expect(loadConfig({ ...dir, DATABASE_URL: database, LISTEN_DATABASE_URL: own }).listenDatabaseUrl).toBe(
      own,
    );
    expect(loadConfig(dir).listenDatabaseUrl).toBeUndefined();
    expect(() => loadConfig({ ...dir, LISTEN_DATABASE_URL: direct })).toThrow(/set DATABASE_URL too/);
    expect(() => loadConfig({ ...dir, DATABASE_URL: database, LISTEN_DATABASE_URL: 'mysql://db' })).toThrow(
      /LISTEN_DATABASE_URL must start with postgres/,
    );
  });

  it('LISTENs through LISTEN_DATABASE_URL: the wake-ups of its schema reach the worker there', async () => {
    // A TCP relay in front of PostgreSQL stands in for the direct address; DATABASE_URL stays direct.
    const relayed: Buffer[] = [];
    let connections = 0;
    const target = new URL(TEST_POSTGRES_URL);
    const relay = createServer((socket) => {
      connections++;
      const upstream = connect(Number(target.port || 5432), target.hostname);
      socket.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => relayed.push(chunk));
      upstream.pipe(socket);
      const close = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const listenUrl = new URL(TEST_POSTGRES_URL);
    listenUrl.host = `127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const other = await startTestServer('postgres', { LISTEN_DATABASE_URL: listenUrl.toString() });
    try {
      // Listening, not only connected: PostgreSQL has answered its LISTEN (the command's completion,
      // tagged LISTEN, came back through the relay). A notification sent before that is not delivered.
      await eventually(
        () =>
          Promise.resolve(connections > 0 && Buffer.concat(relayed).includes('LISTEN\0') ? true : undefined),
        'the listener to LISTEN',
        15_000,
      );
      const schema = new URL(other.env.DATABASE_URL ?? '').searchParams.get('schema') ?? '';
      const channel = `intake_jobs_${schema}`;
      const before = notifications(Buffer.concat(relayed), channel);
      await enqueueJob(other.server.services.db.kysely, pingDueNow(Ping, 'relayed', 9));
      await eventually(
        () => Promise.resolve(notifications(Buffer.concat(relayed), channel) > before ? true : undefined),
        `a notification on ${channel}`,
        15_000,
      );
      // Only the listener goes through it: the service's own queries use DATABASE_URL.
      expect(connections).toBe(1);
    } finally {
      await other.stop();
      await new Promise((resolve) => relay.close(resolve));
    }
  });

  it('reads JOB_LEASE_MS (at least one second), unset by default', () => {
    const dir = { DATA_DIR: server.dataDir };
    expect(loadConfig({ ...dir, JOB_LEASE_MS: '3000' }).jobLeaseMs).toBe(3000);
    expect(loadConfig(dir).jobLeaseMs).toBeUndefined();
    expect(() => loadConfig({ ...dir, JOB_LEASE_MS: '10' })).toThrow(/JOB_LEASE_MS/);
  });
});
