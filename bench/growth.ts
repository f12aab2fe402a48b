/**
 * Costs that must not grow with the data (bench/README.md, "Scale: costs against table size"):
 * creating an intake (`POST /v1/intakes`), reading its status cold (`GET /v1/intakes/:id/status`,
 * every query run), the list's first page with its total, a page from the middle of the account's
 * intakes by cursor and the intakes awaiting review alone (`GET /v1/intakes`, `?starting_after=`,
 * `?awaiting_review=true`), the list filtered (`?awaiting_review=false`, `?status=completed`,
 * `?status=sent&awaiting_review=true`), the dashboard's intake list as its owner opens it (those
 * awaiting review first: `GET /dashboard/intakes`, and `?status=completed`) and an intake's page there,
 * an intake created and deleted, and the worker's claim of due jobs, each timed against a database of
 * 1,000 intakes and one of BENCH_SCALE_ROWS, side by side, in alternating rounds. Every read is cold,
 * as after a commit of the account (on PostgreSQL a real one before each request, untimed). Each ratio
 * is the large database's rate over the small one's (1 = no growth; within 2× = at least 0.5), printed
 * as a BENCH_RESULT line (bench/result.ts).
 *
 * Then, on the large database, a metrics scrape's job summary (`jobBacklog`, which reads every job) is
 * run SCRAPES times while a 1 ms timer runs: the longest the timer waited is how long the scrape held
 * the event loop (goal under 50 ms), printed as a value (median of the scrapes) with its unit.
 *
 * Both databases are filled the same way (bench/bulk.ts: two items, an event and one future reminder
 * job per intake, every tenth intake the benchmark account's, in test mode, the mode of its key), each
 * behind an API server in this process (no worker: the claim is timed by calling it). SQLite, then
 * PostgreSQL (TEST_POSTGRES_URL; skipped with a notice when it does not answer).
 *
 * Environment: BENCH_SCALE_ROWS (default 1,000,000; 20,000 with BENCH_QUICK=1), BENCH_SCALE_ROUNDS
 * (default 3; 1 quick), BENCH_SCALE_OPS (requests or claims per measure and round, default 200; 50
 * quick), BENCH_SCALE_DATABASES (default sqlite,postgres), BENCH_SCALE_ONLY (comma-separated parts of
 * the measures' names: only the measures whose name holds one of them; default all).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { jobBacklog } from '../src/jobs/admin.js';
import { createAccount } from '../src/modules/accounts/accounts.service.js';
import { openSession } from '../src/modules/sessions/session.js';
import { createWorker, startServer, type RunningServer } from '../src/server.js';
import { loadIntakes } from './bulk.js';
import { commitToAccount, withEveryReadAfterACommit } from './cold.js';
import { SMALL_INTAKE_BODY } from './intake-body.js';
import { positiveNumberFromEnv } from './load.js';
import { alternatingRounds, median, printRatio, printResult, QUICK, type BenchResult } from './result.js';
import { dropSchema, postgresReachable } from './processes.js';

const SMALL = 1_000;
const LARGE = Math.round(positiveNumberFromEnv('BENCH_SCALE_ROWS', QUICK ? 20_000 : 1_000_000));
const ROUNDS = Math.round(positiveNumberFromEnv('BENCH_SCALE_ROUNDS', QUICK ? 1 : 3));
const OPS = Math.round(positiveNumberFromEnv('BENCH_SCALE_OPS', QUICK ? 50 : 200));
const SCRAPES = 5;
const SCRAPE_GOAL_MS = 50;
const DATABASES = (process.env.BENCH_SCALE_DATABASES ?? 'sqlite,postgres').split(',').map((d) => d.trim());
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

type Dialect = 'sqlite' | 'postgres';

interface Side {
  size: number;
  server: RunningServer;
  accountId: string;
  key: string;
  probe: string;
  /** An intake of the account's from the middle of its list: the next page starts after it. */
  middle: string;
  /** The Cookie header of a dashboard session of the account's owner, in test mode (the loaded intakes'). */
  cookie: string;
  claim: () => Promise<number>;
  stop(): Promise<void>;
}

const BODY = JSON.stringify({ ...SMALL_INTAKE_BODY, project_name: 'Scale', chase_schedule: 'gentle' });

/** A dashboard page, as the owner's browser asks for it; its HTML's length. */
async function page(side: Side, path: string): Promise<number> {
  const response = await fetch(`${side.server.url}${path}`, { headers: { cookie: side.cookie } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${text.slice(0, 200)}`);
  return text.length;
}

/** A dashboard session for the account's owner, in test mode, as a sign-in by emailed link leaves one. */
async function ownerCookie(server: RunningServer, accountId: string): Promise<string> {
  const db = server.services.db.kysely;
  const owner = await db
    .selectFrom('account_users')
    .select(['id', 'account_id'])
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return `intake_session=${await openSession(db, owner, false, new Date())}`;
}

async function call(side: Side, method: string, path: string, body?: string): Promise<unknown> {
  const response = await fetch(`${side.server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${side.key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

/** An API server (no worker) over a fresh database holding `size` intakes. */
async function open(dialect: Dialect, size: number): Promise<Side> {
  const dataDir = await mkdtemp(join(tmpdir(), 'intake-bench-scale-'));
  const schema = `bench_scale_${process.pid}_${size}_${Date.now().toString(36)}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  const config = loadConfig({
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...(dialect === 'postgres' ? { DATABASE_URL: url.toString() } : {}),
  });
  const server = await startServer(config, { runWorker: false });
  const stop = async () => {
    await server.stop();
    if (dialect === 'postgres') await dropSchema(POSTGRES_URL, schema);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const account = await createAccount(
      server.services.db.kysely,
      { email: `scale-${size}@example.com`, plan: 'agency', rateLimitPerHour: 100_000_000 },
      new Date().toISOString(),
    );
    const started = performance.now();
    await loadIntakes(server.services.db, 1, size, { bigAccount: account.account_id, livemode: false });
    process.stderr.write(
      `  ${dialect}: ${size.toLocaleString('en')} intakes loaded in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
    );
    const worker = createWorker(server.services);
    const side: Side = {
      size,
      server,
      accountId: account.account_id,
      key: account.test_key,
      probe: '',
      middle: '',
      cookie: await ownerCookie(server, account.account_id),
      claim: () => worker.runDue({ limit: 20 }),
      stop,
    };
    const created = (await call(side, 'POST', '/v1/intakes', BODY)) as { intake_id: string };
    side.probe = created.intake_id;
    const intakes = Math.ceil(size / 10);
    const middle = await server.services.db.kysely
      .selectFrom('intakes')
      .select('id')
      .where('account_id', '=', account.account_id)
      .where('livemode', '=', 0)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(Math.floor(intakes / 2))
      .limit(1)
      .executeTakeFirstOrThrow();
    side.middle = middle.id;
    return side;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Operations per second of `op`, OPS times one after another, `before` each (untimed) if given. */
async function rate(op: () => Promise<unknown>, before?: () => Promise<void>): Promise<number> {
  let spent = 0;
  for (let i = 0; i < OPS; i++) {
    await before?.();
    const started = performance.now();
    await op();
    spent += performance.now() - started;
  }
  return OPS / (spent / 1000);
}

const MEASURES = {
  'creation (POST /v1/intakes)': (side: Side) => () => call(side, 'POST', '/v1/intakes', BODY),
  'status, cold (GET /v1/intakes/:id/status)': (side: Side) => () =>
    call(side, 'GET', `/v1/intakes/${side.probe}/status`),
  'list, cold (GET /v1/intakes: the first page and the total)': (side: Side) => () =>
    call(side, 'GET', '/v1/intakes'),
  'list, cold, a page from the middle (GET /v1/intakes?starting_after=)': (side: Side) => () =>
    call(side, 'GET', `/v1/intakes?starting_after=${side.middle}`),
  'list, cold, awaiting review alone (GET /v1/intakes?awaiting_review=true)': (side: Side) => () =>
    call(side, 'GET', '/v1/intakes?awaiting_review=true'),
  'list, cold, not awaiting review (GET /v1/intakes?awaiting_review=false)': (side: Side) => () =>
    call(side, 'GET', '/v1/intakes?awaiting_review=false'),
  'list, cold, of one status (GET /v1/intakes?status=completed)': (side: Side) => () =>
    call(side, 'GET', '/v1/intakes?status=completed'),
  'list, cold, of one status awaiting review (GET /v1/intakes?status=sent&awaiting_review=true)':
    (side: Side) => () =>
      call(side, 'GET', '/v1/intakes?status=sent&awaiting_review=true'),
  "the dashboard's intake list, cold (GET /dashboard/intakes: awaiting review first, the first page)":
    (side: Side) => () =>
      page(side, '/dashboard/intakes'),
  "the dashboard's intake list of one status, cold (GET /dashboard/intakes?status=completed)":
    (side: Side) => () =>
      page(side, '/dashboard/intakes?status=completed'),
  "the dashboard's intake page, cold (GET /dashboard/intakes/:id)": (side: Side) => () =>
    page(side, `/dashboard/intakes/${side.probe}`),
  'creation and deletion (POST /v1/intakes, then DELETE /v1/intakes/:id)': (side: Side) => async () => {
    const created = (await call(side, 'POST', '/v1/intakes', BODY)) as { intake_id: string };
    return call(side, 'DELETE', `/v1/intakes/${created.intake_id}`);
  },
  "worker's claim of due jobs (nothing due)": (side: Side) => side.claim,
} as const;
type Measure = keyof typeof MEASURES;

const ONLY = process.env.BENCH_SCALE_ONLY?.split(',')
  .map((part) => part.trim())
  .filter(Boolean);
const CHOSEN = (Object.keys(MEASURES) as Measure[]).filter(
  (name) => ONLY === undefined || ONLY.some((part) => name.includes(part)),
);
if (CHOSEN.length === 0) {
  throw new Error(`BENCH_SCALE_ONLY=${process.env.BENCH_SCALE_ONLY ?? ''} names no measure`);
}

/**
 * OPS of `op` per second, every read as after a commit of the account: on SQLite by its change version
 * swapped (no statement), on PostgreSQL by a real commit to the account before each, untimed (a kept
 * answer is checked there against the account's version at every read).
 */
function coldRate(side: Side, op: () => Promise<unknown>): Promise<number> {
  if (side.server.services.db.changeVersion) return withEveryReadAfterACommit(side.server, () => rate(op));
  return rate(op, () => commitToAccount(side.server, side.accountId));
}

/** How long a metrics scrape's job summary held the event loop: the longest wait of a 1 ms timer meanwhile. */
async function loopHeldByScrape(side: Side): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const at = performance.now();
    longest = Math.max(longest, at - last);
    last = at;
  }, 1);
  try {
    await jobBacklog(side.server.services.db, Date.now());
  } finally {
    clearInterval(timer);
  }
  return Math.max(longest, performance.now() - last);
}

async function bench(dialect: Dialect): Promise<BenchResult[]> {
  const small = await open(dialect, SMALL);
  let large: Side | undefined;
  try {
    large = await open(dialect, LARGE);
    const rounds = await alternatingRounds({
      small,
      large,
      names: CHOSEN,
      rounds: ROUNDS,
      rateOf: (name, side) => coldRate(side, MEASURES[name](side)),
      onRound: (name, round, entry) =>
        process.stderr.write(
          `  ${dialect} round ${round + 1}, ${name}: ${Math.round(entry.service)}/s at ${LARGE.toLocaleString('en')}, ${Math.round(entry.baseline)}/s at ${SMALL.toLocaleString('en')}\n`,
        ),
    });
    const label = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    const results = CHOSEN.map((name) =>
      printRatio({
        name: `scale: ${name} at ${LARGE.toLocaleString('en')} intakes (${label})`,
        goal: '>=0.5',
        baseline: `the same at ${SMALL.toLocaleString('en')} intakes (per second; within 2× = at least 0.5)`,
        rounds: rounds.get(name) ?? [],
      }),
    );
    const held: number[] = [];
    for (let scrape = 0; scrape < SCRAPES; scrape++) held.push(await loopHeldByScrape(large));
    process.stderr.write(
      `  ${dialect}: a scrape held the loop ${held.map((ms) => ms.toFixed(1)).join(', ')} ms\n`,
    );
    const scrape: BenchResult = {
      name: `scale: event loop held by a metrics scrape at ${LARGE.toLocaleString('en')} intakes (${label})`,
      goal: `<${SCRAPE_GOAL_MS}`,
      baseline: `none: the longest wait of a 1 ms timer while the job table is summed up (median of ${SCRAPES})`,
      unit: 'ms',
      value: Number(median(held).toFixed(1)),
    };
    printResult(scrape);
    return [...results, scrape];
  } finally {
    await large?.stop();
    await small.stop();
  }
}

const results: BenchResult[] = [];
for (const dialect of DATABASES) {
  if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error(`unknown database ${dialect}`);
  if (dialect === 'postgres' && !(await postgresReachable(POSTGRES_URL))) {
    process.stderr.write(`PostgreSQL at ${POSTGRES_URL} does not answer: skipped\n`);
    continue;
  }
  process.stderr.write(
    `${dialect}: ${SMALL.toLocaleString('en')} against ${LARGE.toLocaleString('en')} intakes\n`,
  );
  results.push(...(await bench(dialect)));
}
console.log(
  JSON.stringify({ small: SMALL, large: LARGE, rounds: ROUNDS, ops: OPS, loadavg1: loadavg()[0], results }),
);
