#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig, loadDataLocation } from './config.js';
import { BackupError, backupDataDir, restoreDataDir } from './db/backup.js';
import { migrateToLatest, openDatabase } from './db/database.js';
import { PLAN_IDS } from './domain/plans.js';
import {
  formatJobTable,
  JOB_STATES,
  listJobs,
  parseAge,
  purgeFailedJobs,
  retryFailedJobs,
  type JobState,
} from './jobs/admin.js';
import { ApiError } from './http/errors.js';
import { CreateAccountInput } from './modules/accounts/accounts.schemas.js';
import { createAccount, setRateLimitOverride } from './modules/accounts/accounts.service.js';
import { credentialsPath, deviceLogin, keyHint, storeCredential } from './modules/oauth/device.client.js';
import { issueSignInLink } from './modules/sessions/sign-in.service.js';
import { systemClock } from './lib/clock.js';
import { runExitHooks } from './lib/exit-hooks.js';

function jobStateOption(value: string): JobState {
  const state = JOB_STATES.find((s) => s === value);
  if (!state) throw new InvalidArgumentError(`expected one of ${JOB_STATES.join(', ')}`);
  return state;
}

function ageOption(value: string): number {
  const ms = parseAge(value);
  if (ms === null) throw new InvalidArgumentError('expected an age such as 30d, 12h or 45m');
  return ms;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

async function serve(options: { runWorker: boolean }): Promise<void> {
  const config = loadConfig();
  // Loaded here, not at the top: the admin commands (jobs, backup…) start without the whole service.
  const { startServer } = await import('./server.js');
  const server = await startServer(config, options);
  const shown = config.baseUrl;
  console.log(`Intake service listening on ${server.url} (public address ${shown})`);
  console.log(
    `Database: ${server.services.db.dialect}; files: ${server.services.storage.kind}; email: ${server.services.mailer.kind}`,
  );
  console.log(
    options.runWorker
      ? 'Background worker: running in this process.'
      : 'Background worker: not in this process (run `worker` processes for reminders, webhooks and purges).',
  );
  if (server.metricsUrl) console.log(`Metrics: ${server.metricsUrl}`);
  console.log('Create a first account and its API keys with:');
  console.log('  npm run --silent cli -- accounts create --email you@example.com --plan free --json');
  let signals = 0;
  const shutdown = (signal: string) => {
    signals++;
    if (signals > 1) process.exit(1);
    server.app.log.info({ signal }, 'draining: finishing in-flight requests');
    server.stop(config.shutdownGraceMs).then(
      () => runExitHooks().then(() => process.exit(0)),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/** The worker role alone: claims and runs due jobs, no HTTP. Stops gracefully on SIGTERM/SIGINT. */
async function work(): Promise<void> {
  const config = loadConfig();
  const { startWorker, WORKER_POLL_INTERVAL_MS } = await import('./server.js');
  const running = await startWorker(config);
  console.log(
    `Intake worker running (database: ${running.services.db.dialect}; polling every ${WORKER_POLL_INTERVAL_MS} ms)`,
  );
  if (running.metricsUrl) console.log(`Metrics: ${running.metricsUrl}`);
  let signals = 0;
  const shutdown = (signal: string) => {
    signals++;
    if (signals > 1) process.exit(1);
    console.log(`${signal}: finishing the jobs in flight`);
    running.stop().then(
      () => runExitHooks().then(() => process.exit(0)),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

async function withDatabase<T>(work: (db: ReturnType<typeof openDatabase>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // The modules' answers to each other's questions (the plan's key cap asks for OAuth sign-ins) and their
  // event subscribers, wired as the server wires them: a command changes data as the API would.
  await import('./subscribers.js');
  const db = openDatabase(config);
  try {
    await migrateToLatest(db, config.databaseUrl);
    return await work(db);
  } finally {
    await db.close();
  }
}

const program = new Command()
  .name('intake')
  .description('Intake collection service: server and admin commands')
  .showHelpAfterError();

program
  .command('serve', { isDefault: true })
  .description('HTTP API, portal and worker in one process')
  .action(() => serve({ runWorker: true }));
program
  .command('api')
  .description('the HTTP API only, without the worker (run many against PostgreSQL)')
  .action(() => serve({ runWorker: false }));
program
  .command('worker')
  .description('the background worker only: reminders, webhook deliveries, auto-approvals, purges')
  .action(work);

program
  .command('mcp')
  .description(
    'the agent tools (MCP) over stdio against BASE_URL, with the key in INTAKE_API_KEY (else the one `login` stored, else a device sign-in)',
  )
  .action(async () => {
    const { serveMcpOverStdio } = await import('./modules/mcp/mcp.stdio.js');
    await serveMcpOverStdio();
  });

program
  .command('login')
  .description(
    'sign in an agent by device code: approve it in the dashboard, and the API key is stored (mode 0600) for `mcp`',
  )
  .option(
    '--scopes <scopes>',
    'comma-separated scopes to ask for (the approver can change them)',
    'intakes:read,intakes:write',
  )
  .action(async (options: { scopes: string }) => {
    const { mcpStdioConfig } = await import('./modules/mcp/mcp.stdio.js');
    const { baseUrl } = mcpStdioConfig(process.env);
    const file = credentialsPath(process.env);
    const credential = await deviceLogin({
      baseUrl,
      clientId: 'intake-cli',
      scopes: options.scopes
        .split(',')
        .map((scope) => scope.trim())
        .filter(Boolean),
      say: (line) => console.log(line),
    });
    storeCredential(file, baseUrl, credential);
    console.log(
      `Signed in to ${baseUrl}: ${credential.mode} key ${keyHint(credential.api_key)} with ${credential.scopes.join(', ')}, stored in ${file}.`,
    );
  });

program
  .command('migrate')
  .description('apply database migrations')
  .action(async () => {
    // Not withDatabase: it migrates first, and this command must report what it applied.
    const config = loadConfig();
    const db = openDatabase(config);
    try {
      const applied = await migrateToLatest(db, config.databaseUrl);
      console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
    } finally {
      await db.close();
    }
  });

program
  .command('sign-in-link')
  .description(
    "print a one-time dashboard sign-in link (15 minutes) for a user's address: the way in without SMTP_URL",
  )
  .requiredOption('--email <email>', "the user's email address")
  .action(async (options: { email: string }) => {
    const config = loadConfig();
    const url = await withDatabase((db) =>
      issueSignInLink({ db, clock: systemClock, config }, options.email),
    );
    if (!url) throw new ConfigError(`No dashboard user has the address ${options.email}.`);
    // On the operator's terminal only: the server never logs a link.
    process.stdout.write(url + '\n');
  });

const accounts = program.command('accounts').description('manage accounts');
accounts
  .command('create')
  .description('create an account and print its first live and test admin keys')
  .requiredOption('--email <email>', 'account email')
  .option('--name <name>', 'account name (default: the email)')
  .option('--plan <plan>', `plan: ${PLAN_IDS.join(', ')}`, 'free')
  .option('--rate-limit <perHour>', "requests per hour per key, overriding the plan's", positiveInt)
  .option('--json', 'print exactly one JSON object')
  .action(
    async (options: { email: string; name?: string; plan: string; rateLimit?: number; json?: boolean }) => {
      const input = CreateAccountInput.safeParse({
        email: options.email,
        name: options.name,
        plan: options.plan,
        rateLimitPerHour: options.rateLimit,
      });
      if (!input.success) {
        throw new ConfigError(
          input.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'),
        );
      }
      const created = await withDatabase((db) =>
        createAccount(db.kysely, input.data, new Date().toISOString()),
      );
      if (options.json) {
        process.stdout.write(JSON.stringify(created) + '\n');
        return;
      }
      console.log(`Account ${created.account_id} created (plan ${input.data.plan}).`);
      console.log(`Live admin key: ${created.live_key}`);
      console.log(`Test admin key: ${created.test_key}`);
      console.log('These keys are shown once; store them now.');
    },
  );

accounts
  .command('set-rate-limit')
  .description("set an account's requests per hour per key (contract override); --clear restores the plan's")
  .argument('<account>', 'account id or email')
  .argument('[perHour]', 'requests per hour', positiveInt)
  .option('--clear', "use the plan's limit again")
  .action(async (account: string, perHour: number | undefined, options: { clear?: boolean }) => {
    if (perHour === undefined && !options.clear)
      throw new ConfigError('Give a number of requests per hour, or --clear.');
    const found = await withDatabase((db) =>
      setRateLimitOverride(db.kysely, account, options.clear ? null : (perHour ?? null)),
    );
    if (!found) throw new ConfigError(`No account with id or email ${account}.`);
    console.log(
      options.clear
        ? 'Rate limit override cleared.'
        : `Rate limit set to ${perHour} requests per hour per key.`,
    );
  });

const jobs = program.command('jobs').description('see, retry and purge background jobs');
jobs
  .command('list')
  .description('jobs oldest due first: queued (waiting), running (a worker holds it), failed (given up)')
  .option('--state <state>', `only jobs in this state: ${JOB_STATES.join(', ')}`, jobStateOption)
  .option('--kind <kind>', 'only jobs of this kind')
  .option('--limit <n>', 'at most this many', positiveInt, 1000)
  .option('--json', 'print a JSON array, one object per job')
  .action(async (options: { state?: JobState; kind?: string; limit: number; json?: boolean }) => {
    const listed = await withDatabase((db) =>
      listJobs(
        db.kysely,
        {
          limit: options.limit,
          ...(options.state ? { state: options.state } : {}),
          ...(options.kind ? { kind: options.kind } : {}),
        },
        Date.now(),
      ),
    );
    console.log(options.json ? JSON.stringify(listed) : formatJobTable(listed));
  });
jobs
  .command('retry')
  .description('run a failed job again now (its attempts start from zero); --failed: every failed job')
  .argument('[id]', 'the job id (job_…)')
  .option('--failed', 'retry every failed job (with --kind: of that kind)')
  .option('--kind <kind>', 'with --failed: only jobs of this kind')
  .action(async (id: string | undefined, options: { failed?: boolean; kind?: string }) => {
    if ((id === undefined) === (options.failed !== true))
      throw new ConfigError('Give either a job id or --failed.');
    const retried = await withDatabase((db) =>
      retryFailedJobs(
        db.kysely,
        id !== undefined ? { id } : options.kind ? { kind: options.kind } : {},
        Date.now(),
      ),
    );
    if (id !== undefined && retried.length === 0)
      throw new ConfigError(
        `No failed job ${id} (only failed jobs can be retried; see jobs list --state failed).`,
      );
    console.log(
      `Retried ${retried.length} job${retried.length === 1 ? '' : 's'}${retried.length ? `: ${retried.join(', ')}` : '.'}`,
    );
  });
jobs
  .command('purge')
  .description('delete failed jobs whose last attempt is older than the given age')
  .requiredOption('--failed', 'purge failed jobs (the only kind of purge)')
  .requiredOption('--older-than <age>', 'e.g. 30d, 12h', ageOption)
  .option('--kind <kind>', 'only jobs of this kind')
  .action(async (options: { olderThan: number; kind?: string }) => {
    const purged = await withDatabase((db) =>
      purgeFailedJobs(db.kysely, {
        before: Date.now() - options.olderThan,
        ...(options.kind ? { kind: options.kind } : {}),
      }),
    );
    console.log(`Purged ${purged} failed job${purged === 1 ? '' : 's'}.`);
  });

program
  .command('backup')
  .description(
    'copy the SQLite database (online, consistent), the files and the secret key of DATA_DIR into one archive',
  )
  .requiredOption('--out <file>', 'the archive to write (.tar.gz)')
  .option('--json', 'print exactly one JSON object')
  .action(async (options: { out: string; json?: boolean }) => {
    const location = loadDataLocation();
    if (location.databaseUrl) {
      throw new ConfigError(
        'DATABASE_URL is set: back up PostgreSQL with pg_dump (pg_dump --format=custom "$DATABASE_URL" > intake.dump) and the bucket with its own tools; this command copies the embedded SQLite deployment only.',
      );
    }
    const summary = await backupDataDir(location.dataDir, options.out);
    if (options.json) {
      console.log(JSON.stringify(summary));
      return;
    }
    console.log(
      `Backup written to ${summary.archive} (${summary.bytes} bytes): database at migration ${summary.migration ?? 'none'}, ${summary.files} file${summary.files === 1 ? '' : 's'}${summary.secret_key ? ', secret key' : ''}.`,
    );
    if (location.storageUrl)
      console.log('Files are in the bucket (STORAGE_URL): back it up with its own tools.');
  });

program
  .command('restore')
  .description('unpack a backup into an empty DATA_DIR and check the database (stop the service first)')
  .requiredOption('--from <file>', 'the archive written by backup')
  .action(async (options: { from: string }) => {
    const location = loadDataLocation();
    if (location.databaseUrl) {
      throw new ConfigError(
        'DATABASE_URL is set: restore PostgreSQL with pg_restore; this command restores the embedded SQLite deployment only.',
      );
    }
    const summary = await restoreDataDir(options.from, location.dataDir);
    console.log(
      `Restored into ${summary.data_dir}: backup of ${summary.created_at}, database at migration ${summary.migration ?? 'none'} (integrity ok), ${summary.files} file${summary.files === 1 ? '' : 's'}.`,
    );
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError || error instanceof ApiError || error instanceof BackupError) {
    console.error(`error: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exitCode = 1;
}
