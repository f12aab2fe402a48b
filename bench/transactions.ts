/**
 * A small transaction on PostgreSQL (bench/README.md, "A transaction's begin and commit go out with its
 * statements"): the service's database handle (openDatabase: named statements, deferred writes, a
 * transaction's `begin` and `commit` sent with its statements) against pg alone sending the same
 * statements one by one. Each side runs BENCH_TX_COUNT transactions one after another on one
 * connection, in alternating rounds (BENCH_TX_ROUNDS), and prints its transactions per second and the
 * process's CPU per transaction. The transaction is a reminder's outcome in small: a row locked by an
 * update, then an insert whose result nobody reads (deferrable), then `commit`.
 *
 * BENCH_TX_DELAY_MS (default 0) puts a network between both sides and PostgreSQL: a relay on loopback
 * that holds every chunk half that long in each direction, so that each round trip takes that much
 * longer, as to a database on another machine.
 *
 * With BENCH_POOLER_URL (a pooler in front of the same database, such as PgBouncer in transaction
 * mode), it then runs BENCH_TX_COUNT transactions through the pooler from BENCH_TX_CLIENTS clients at
 * once, every tenth rolled back by the transaction itself, and checks that each committed transaction
 * left both of its writes and each rolled-back or failed one neither; it exits with status 1 if not.
 * BENCH_POOLER_NAMED=1 lets the handle name its statements (a pooler that does not keep them refuses
 * the first ones, then the process stops naming: docs/deploy.md).
 *
 *   npm run bench:transactions
 *   BENCH_POOLER_URL=postgres://postgres@127.0.0.1:6432/test npx tsx bench/transactions.ts
 */
import { randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../src/db/database.js';
import { deferrable } from '../src/db/deferred-writes.js';
import { positiveNumberFromEnv } from './load.js';
import { median } from './result.js';
import { postgresReachable } from './processes.js';

const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const COUNT = Math.round(positiveNumberFromEnv('BENCH_TX_COUNT', 2_000));
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_TX_ROUNDS', 3));
const CLIENTS = Math.round(positiveNumberFromEnv('BENCH_TX_CLIENTS', 8));
const POOLER_URL = process.env.BENCH_POOLER_URL;
const DELAY_MS = Number(process.env.BENCH_TX_DELAY_MS ?? '0');

interface Tables {
  tx_counter: { id: string; n: number };
  tx_rows: { id: string; n: number };
}

interface Figures {
  perSecond: number;
  cpuMicros: number;
}

/** `count` runs of `transaction`, one after another: their rate and this process's CPU for each. */
async function timed(count: number, transaction: (i: number) => Promise<void>): Promise<Figures> {
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) await transaction(i);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return { perSecond: count / seconds, cpuMicros: (used.user + used.system) / count };
}

async function main(): Promise<void> {
  if (!(await postgresReachable(POSTGRES_URL)))
    throw new Error(`PostgreSQL does not answer at ${POSTGRES_URL}`);
  const schema = `bench_tx_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.query(`create table ${schema}.tx_counter (id text primary key, n integer not null)`);
  await admin.query(`create table ${schema}.tx_rows (id text primary key, n integer not null)`);
  await admin.query(`insert into ${schema}.tx_counter (id, n) values ('c', 0)`);
  const relay = DELAY_MS > 0 ? await delayingRelay(new URL(POSTGRES_URL), DELAY_MS / 2) : undefined;
  const url = new URL(POSTGRES_URL);
  if (relay) url.port = String(relay.port);
  if (relay)
    console.log(`every round trip to PostgreSQL ${DELAY_MS} ms longer (a relay on port ${relay.port})`);
  const bare = new pg.Client({ connectionString: url.toString(), options: `-c search_path=${schema}` });
  url.searchParams.set('schema', schema);
  const service = openDatabase({ databaseUrl: url.toString(), dataDir: '' });
  const db = service.kysely as unknown as Kysely<Tables>;
  await bare.connect();
  try {
    const serviceTransaction = (round: number) => (i: number) =>
      db.transaction().execute(async (trx) => {
        await trx.updateTable('tx_counter').set({ n: i }).where('id', '=', 'c').execute();
        await deferrable(trx.insertInto('tx_rows').values({ id: `s${round}-${i}`, n: i })).execute();
      });
    const bareTransaction = (round: number) => async (i: number) => {
      await bare.query('begin');
      await bare.query('update tx_counter set n = $1 where id = $2', [i, 'c']);
      await bare.query('insert into tx_rows (id, n) values ($1, $2)', [`b${round}-${i}`, i]);
      await bare.query('commit');
    };
    // Warm-up: the statements named, the plans made, the JIT warm.
    await timed(200, serviceTransaction(-1));
    await timed(200, bareTransaction(-1));
    const rounds: { service: Figures; bare: Figures }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let serviceSide: Figures;
      let bareSide: Figures;
      if (round % 2 === 0) {
        bareSide = await timed(COUNT, bareTransaction(round));
        serviceSide = await timed(COUNT, serviceTransaction(round));
      } else {
        serviceSide = await timed(COUNT, serviceTransaction(round));
        bareSide = await timed(COUNT, bareTransaction(round));
      }
      rounds.push({ service: serviceSide, bare: bareSide });
      console.log(
        `round ${round + 1}: the service's handle ${serviceSide.perSecond.toFixed(0)}/s, ` +
          `${serviceSide.cpuMicros.toFixed(0)} µs of CPU each; pg alone ${bareSide.perSecond.toFixed(0)}/s, ` +
          `${bareSide.cpuMicros.toFixed(0)} µs each`,
      );
    }
    const ratio = median(rounds.map((r) => r.service.perSecond / r.bare.perSecond));
    const cpu = median(rounds.map((r) => r.service.cpuMicros / r.bare.cpuMicros));
    console.log(
      `median over ${ROUNDS} rounds of ${COUNT}: transactions per second ${ratio.toFixed(3)}× pg alone, ` +
        `CPU per transaction ${cpu.toFixed(3)}×`,
    );
    if (POOLER_URL) await throughPooler(admin, schema);
  } finally {
    await bare.end();
    await service.close();
    relay?.close();
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}

/**
 * A TCP relay on loopback to `target`'s host and port that delivers each chunk `holdMs` after it
 * arrived, in each direction, in order (timers of one duration fire in the order they were set).
 */
async function delayingRelay(target: URL, holdMs: number): Promise<{ port: number; close: () => void }> {
  const sockets = new Set<Socket>();
  const pipeLate = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => setTimeout(() => to.write(chunk), holdMs));
    from.on('end', () => setTimeout(() => to.end(), holdMs));
    from.on('error', () => to.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
    }
    pipeLate(client, upstream);
    pipeLate(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** Concurrent transactions through the pooler, then what they left checked against what they answered. */
async function throughPooler(admin: pg.Client, schema: string): Promise<void> {
  const url = new URL(POOLER_URL as string);
  // A pooler may refuse a search_path given at connection: the statements name the schema instead.
  url.searchParams.set('prepared_statements', process.env.BENCH_POOLER_NAMED === '1' ? 'true' : 'false');
  const warnings: string[] = [];
  const pooled = openDatabase({ databaseUrl: url.toString(), dataDir: '', warn: (m) => warnings.push(m) });
  const db = pooled.kysely as unknown as Kysely<Tables>;
  await admin.query(`update ${schema}.tx_counter set n = 0`);
  const committed: string[] = [];
  const failures: string[] = [];
  let rolledBack = 0;
  let next = 0;
  const started = Date.now();
  try {
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i = next++; i < COUNT; i = next++) {
          const id = `p${i}`;
          try {
            await db.transaction().execute(async (trx) => {
              await trx
                .withSchema(schema)
                .updateTable('tx_counter')
                .set((eb) => ({ n: eb('n', '+', 1) }))
                .where('id', '=', 'c')
                .execute();
              await deferrable(trx.withSchema(schema).insertInto('tx_rows').values({ id, n: i })).execute();
              if (i % 10 === 0) throw new RolledBack();
              await trx.withSchema(schema).selectFrom('tx_counter').select('n').execute();
            });
            committed.push(id);
          } catch (error) {
            if (error instanceof RolledBack) rolledBack++;
            else failures.push((error as Error).message);
          }
        }
      }),
    );
  } finally {
    await pooled.close();
  }
  const rows = await admin.query<{ id: string }>(`select id from ${schema}.tx_rows where id like 'p%'`);
  const counter = await admin.query<{ n: number }>(`select n from ${schema}.tx_counter`);
  const left = new Set(rows.rows.map((r) => r.id));
  const missing = committed.filter((id) => !left.has(id));
  const extra = rows.rows.length - (committed.length - missing.length);
  console.log(
    `through the pooler, ${CLIENTS} clients: ${COUNT} transactions in ${Date.now() - started} ms, ` +
      `${committed.length} committed, ${rolledBack} rolled back, ${failures.length} failed` +
      (failures.length > 0 ? ` (${[...new Set(failures)].join('; ')})` : '') +
      `; ${warnings.length} warning(s); counter ${counter.rows[0]?.n}`,
  );
  if (missing.length > 0 || extra !== 0 || counter.rows[0]?.n !== committed.length) {
    console.error(
      `inconsistent: ${missing.length} committed transaction(s) without their row, ${extra} row(s) of ` +
        `transactions that did not commit, counter ${counter.rows[0]?.n} against ${committed.length} commits`,
    );
    process.exitCode = 1;
  }
}

class RolledBack extends Error {}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
