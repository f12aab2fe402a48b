import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database, JobsTable } from '../db/schema.js';
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Clock } from '../lib/clock.js';
import { jobFailures, jobRuns } from '../lib/metrics.js';
import { GROUP_COMMIT_GATHER_MS, GroupCommit } from './group-commit.js';
import { preparedQuery } from '../db/prepared.js';
import type { JobOnOffer, TakenAtWrite, WriteOffer } from './wakeup.js';
import {
  GAVE_UP_LOCKED_UNTIL,
  JobLeaseLostError,
  notGivenUp,
  type JobFence,
  jobDefinition,
  kindName,
  type AnyJobKind,
  type JobDefinition,
  type JobHandler,
} from './jobs.js';

/** The part of a pino logger the worker uses. */
export interface WorkerLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface WorkerOptions {
  db: Db;
  /** Real time: due_at and locked_until are real epoch ms in both modes. */
  clock: Clock;
  logger: WorkerLogger;
  /** Pause between polls when the last poll found fewer due jobs than a full batch. */
  pollIntervalMs: number;
  /** How long a claim lasts; a worker that dies mid-job leaves the job to others once it expires. */
  leaseMs?: number;
  /** The worker stops waiting for a handler after this long and counts the attempt as failed. */
  jobTimeoutMs?: number;
  /** Jobs claimed at most by one statement. */
  batchSize?: number;
  /**
   * Jobs of one kind the poll loop runs at once, for kinds that set no concurrency of their own
   * (default DEFAULT_CONCURRENCY); runDue runs one after another.
   */
  concurrency?: number;
  /** Jobs of a kind claimed beyond its free slots, to start at once when a slot frees (default DEFAULT_PREFETCH). */
  prefetch?: number;
  /** Wake-ups start a claim at most this often (default NUDGE_SPACING_MS). */
  nudgeSpacingMs?: number;
  /**
   * SQLite: how long an outcome's commit waits at most for the outcomes of handlers still running
   * (default GROUP_COMMIT_GATHER_MS; see GroupCommit).
   */
  outcomeGatherMs?: number;
}

export interface RunDueOptions {
  accountId?: string;
  livemode?: boolean;
  limit?: number;
  /** Kinds left to the poll loop (e.g. requests to third parties that may take their whole time-out). */
  exceptKinds?: readonly AnyJobKind[];
}

/** Which running jobs whenSettled waits for. */
export interface SettledFilter {
  accountId: string;
  livemode: boolean;
  exceptKinds?: readonly AnyJobKind[];
}

/**
 * A claim lasts 30 seconds and is renewed every 10 seconds while its handler runs (the heartbeat), so a
 * live worker keeps its jobs however long they take, and the jobs of a worker that was killed (a whole
 * backlog of webhook attempts it had claimed) move to another worker within 30 seconds, not minutes.
 */
export const DEFAULT_LEASE_MS = 30_000;
/**
 * How long a handler of a kind without a time-out of its own may run, when the lease is the default
 * (the heartbeat keeps its claim meanwhile). With JOB_LEASE_MS set it is derived from that lease.
 */
export const DEFAULT_JOB_TIMEOUT_MS = 270_000;
const DEFAULT_BATCH_SIZE = 20;
/**
 * Jobs of one kind one worker runs at once: a job that waits (a slow mail relay, a provider's
 * time-out) holds one slot of its kind, not the whole worker, and one worker overlaps several jobs' waits.
 */
export const DEFAULT_CONCURRENCY = 4;
/**
 * Jobs of a kind claimed beyond its free slots (at most its limit, or its key's): they start the
 * moment a slot frees instead of after a claim's round trip, and one claim serves several jobs (the
 * next claim comes when they have started). Small, because a claimed job waiting for a slot is held
 * from every other worker.
 */
export const DEFAULT_PREFETCH = 4;

/**
 * Retry backoff. An attempt is counted when a job is claimed (so a process that crashes mid-job
 * uses up an attempt too); after the n-th failed attempt the job is due again after:
 *
 * | failed attempts | retried after |
 * |-----------------|---------------|
 * | 1               | 1 minute      |
 * | 2               | 5 minutes     |
 * | 3               | 25 minutes    |
 * | 4               | 2 hours       |
 * | 5, 6, 7         | 12 hours      |
 * | 8               | given up      |
 *
 * About 38.5 hours from the first failure to giving up. A job given up on keeps its row (attempts,
 * last_error) with locked_until = GAVE_UP_LOCKED_UNTIL, so no worker claims it again, and frees its
 * unique key; an error is logged. Delays are in real time; a test-mode clock advance brings them forward like any test job.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  60_000,
  5 * 60_000,
  25 * 60_000,
  2 * 3_600_000,
  12 * 3_600_000,
  12 * 3_600_000,
  12 * 3_600_000,
];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export { GAVE_UP_LOCKED_UNTIL };

/** The delay before the next attempt after `failedAttempts` failures, or null to give up. */
export function retryDelayMs(failedAttempts: number): number | null {
  if (failedAttempts >= MAX_ATTEMPTS) return null;
  return RETRY_DELAYS_MS[Math.max(0, failedAttempts - 1)] ?? null;
}

type JobRow = Selectable<JobsTable>;

interface Registration {
  definition: JobDefinition;
  handler: JobHandler<unknown>;
  onGiveUp: GiveUpHandler<unknown> | undefined;
}

/** What a kind's give-up hook is told: the job given up on, and why. */
export interface GivenUpJob<P> {
  id: string;
  accountId: string;
  livemode: boolean;
  kind: string;
  subjectId: string;
  payload: P;
  /** Claims of the job so far, this one included. */
  attempts: number;
  error: unknown;
}

/**
 * Records what giving a job up means for its subject (a message that may have gone out is marked
 * failed), in the transaction that marks the job given up: both commit, or neither and the job is
 * given up again after its lease.
 */
export type GiveUpHandler<P> = (job: GivenUpJob<P>, trx: Kysely<Database>) => Promise<void>;

export interface RegisterOptions<P> {
  onGiveUp?: GiveUpHandler<P>;
}

/**
 * A claimed job: its row (attempts already counting this attempt) and the lease that fences it
 * (moved on while the job runs, see renewLeases).
 */
interface Claimed {
  row: JobRow;
  lease: number;
  /** Aborts the handler: time-out or shutdown. */
  controller?: AbortController;
  /** Its outcome is being recorded: the lease is no longer renewed. */
  settling?: boolean;
  /** The lease a renewal in progress is writing: until it is known to have landed, either fences. */
  renewingTo?: number;
  /** The handler ended the job itself (Job.complete), in its own transaction. */
  completed?: boolean;
  /** The handler began the part that must not run twice (Job.beginIrreversible). */
  irreversible?: boolean;
  /**
   * Gives the job's slot (of its kind, and of its key) back to the poll loop; set while the job holds
   * one. Called once the handler hands its outcome over (Job.finish), so the next job starts while
   * the outcome is being recorded, and in any case when the run ends. Only the first call counts.
   */
  freeSlot?: () => void;
}

/** The reason a handler's signal is aborted with when the worker shuts down. */
class ShutdownError extends Error {
  constructor() {
    super('the worker is shutting down');
    this.name = 'ShutdownError';
  }
}

/**
 * Wake-ups (nudge) start a claim at most this often: a burst of jobs enqueued one per request is then
 * claimed a few at a time, each claim taking all that is due, while a job enqueued after a quiet spell
 * is claimed at once. Backlog claims (slots freed with more due) are not spaced.
 */
export const NUDGE_SPACING_MS = 5;

/** How long stop() lets running handlers finish before it aborts them. */
export const DEFAULT_STOP_GRACE_MS = 5_000;

/** One pick of a claim: due jobs of these kinds, oldest first, at most `limit`. */
interface Pick {
  kinds: string[];
  limit: number;
  /** A kind limited per concurrency key: at most `allowance` of a key, less what is in hand. */
  keyed?: { allowance: number; inHand: Map<string, number> };
}

/**
 * Whether a pick limited per key may have left due jobs of a key behind: a key of which this worker
 * now holds its whole allowance (the claim took all it could of that key, or passed the key over as
 * full). A claim that took fewer than the pick's limit and filled no key's allowance saw every due
 * job of the kind (a pick that came back full is a backlog of its own).
 */
function keyLeftBehind(keyed: NonNullable<Pick['keyed']>, claimed: readonly Claimed[]): boolean {
  const held = new Map(keyed.inHand);
  for (const { row } of claimed) {
    if (row.concurrency_key !== null) held.set(row.concurrency_key, (held.get(row.concurrency_key) ?? 0) + 1);
  }
  for (const n of held.values()) if (n >= keyed.allowance) return true;
  return false;
}

/**
 * Claims due jobs and runs them. Any number of workers (in any number of processes) may share one
 * database: claiming is atomic (PostgreSQL: SELECT … FOR UPDATE SKIP LOCKED in a transaction that
 * also sets the lease; SQLite: one UPDATE … WHERE id IN (SELECT …) RETURNING, under SQLite's single
 * writer), so no job runs twice at once. The lease (locked_until) is the fencing token: completion
 * and failure only touch the row while it still carries this worker's lease, so a worker whose lease
 * expired (and whose job another worker took) changes nothing when it finally finishes.
 */
export class Worker {
  private readonly db: Db;
  private readonly clock: Clock;
  private readonly logger: WorkerLogger;
  private readonly pollIntervalMs: number;
  private readonly leaseMs: number;
  private readonly jobTimeoutMs: number;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly prefetch: number;
  private readonly nudgeSpacingMs: number;
  /** Jobs the poll loop is running now, per kind, and per kind and concurrency key (keyOf). */
  private readonly active = new Map<string, number>();
  private readonly activeByKey = new Map<string, number>();
  /** Claimed by the poll loop, waiting for a free slot of their kind (at most the prefetch of each). */
  private queue: Claimed[] = [];
  /**
   * Kinds of which due jobs may be waiting unclaimed: the last claim may have left some behind (the kind
   * had no room, its pick came back full, or left a key behind), or a job was written since for the
   * claim that comes as a slot frees (see takeAtWrite). Per kind, so that one kind's backlog (a slow
   * receiver's webhook attempts) does not hold another's jobs back from being taken as they are written.
   */
  private backlog = new Set<string>();
  /** Kinds of jobs written for the claim that comes as a slot frees, since the poll loop's claim began. */
  private leftForClaim = new Set<string>();
  /** The wake-up of the job just written for that claim (see takeAtWrite): the worker lets it pass. */
  private passNextNudge = false;
  private readonly registrations = new Map<string, Registration[]>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private running = false;
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  /** A wake-up arrived while the worker was busy: the next sleep is cut to what is left of the spacing. */
  private nudged = false;
  /** When the poll loop's last claim ended (performance.now()): wake-ups keep NUDGE_SPACING_MS from it. */
  private lastClaimEnd = Number.NEGATIVE_INFINITY;
  /** A wake-up that came within the spacing, due when the spacing has passed. */
  private nudgeTimer: NodeJS.Timeout | undefined;
  private pollClaimCount = 0;
  private takenAtWriteCount = 0;
  /** Jobs taken at their write (takeAtWrite), waiting for the writer's transaction to end. */
  private readonly taking = new Set<Promise<void>>();
  /** Jobs whose handlers are running (poll loop and runDue): their leases are renewed, stop() aborts them. */
  private readonly runningJobs = new Set<Claimed>();
  /** Jobs this worker has started and not yet finished, by id: runNow and whenSettled wait for them. */
  private readonly runs = new Map<string, { row: JobRow; done: Promise<void> }>();
  /** The poll loop's claim under way, if any: resolves once what it took is queued or running. */
  private claiming: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** The renewal in progress: an outcome waits for it, so it is recorded under the current lease. */
  private renewing: Promise<void> = Promise.resolve();
  /** A renewal is queued behind `renewing` and has not begun: jobs starting now are in it. */
  private renewalQueued = false;
  /** On SQLite, outcomes of jobs finishing at the same moment share a commit (Job.finish, and the end of a done job). */
  private readonly outcomes: GroupCommit;

  constructor(options: WorkerOptions) {
    this.db = options.db;
    this.clock = options.clock;
    this.logger = options.logger;
    this.pollIntervalMs = options.pollIntervalMs;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    // With a chosen lease, well inside it, so a slow handler is given up before another worker may take its job.
    this.jobTimeoutMs =
      options.jobTimeoutMs ??
      (options.leaseMs === undefined
        ? DEFAULT_JOB_TIMEOUT_MS
        : Math.max(1_000, Math.floor(this.leaseMs * 0.75), this.leaseMs - 30_000));
    this.batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_CONCURRENCY));
    this.prefetch = Math.max(0, Math.floor(options.prefetch ?? DEFAULT_PREFETCH));
    this.nudgeSpacingMs = Math.max(0, options.nudgeSpacingMs ?? NUDGE_SPACING_MS);
    this.outcomes = new GroupCommit(this.db.kysely, this.db.dialect === 'sqlite', {
      expecting: () => this.handlersUnderWay(),
      ms: Math.max(0, options.outcomeGatherMs ?? GROUP_COMMIT_GATHER_MS),
    });
  }

  /** Whether a handler is running that has not handed its outcome over yet (one may be on its way). */
  private handlersUnderWay(): boolean {
    for (const job of this.runningJobs) if (!job.settling) return true;
    return false;
  }

  /** Registers the handler of a kind. A kind defined in the registry (defineJob) is required. */
  register<I, O>(kind: JobDefinition<I, O>, handler: JobHandler<O>, options?: RegisterOptions<O>): this;
  register(kind: string, handler: JobHandler<unknown>, options?: RegisterOptions<unknown>): this;
  register(kind: AnyJobKind, handler: JobHandler<never>, options: RegisterOptions<never> = {}): this {
    const name = kindName(kind);
    const definition = jobDefinition(name);
    if (!definition) throw new Error(`Cannot register a handler for job kind "${name}": it is not defined`);
    const list = this.registrations.get(name) ?? [];
    list.push({
      definition,
      handler: handler as JobHandler<unknown>,
      onGiveUp: options.onGiveUp as GiveUpHandler<unknown> | undefined,
    });
    this.registrations.set(name, list);
    return this;
  }

  /** Start-up check: every kind listed has exactly one handler. Throws naming each problem. */
  assertHandlers(kinds: readonly string[]): void {
    const problems: string[] = [];
    for (const kind of new Set(kinds)) {
      const count = this.registrations.get(kind)?.length ?? 0;
      if (count === 0) problems.push(`job kind "${kind}" has no handler`);
      if (count > 1) problems.push(`job kind "${kind}" has ${count} handlers`);
    }
    for (const [kind, list] of this.registrations) {
      if (list.length > 1 && !kinds.includes(kind))
        problems.push(`job kind "${kind}" has ${list.length} handlers`);
    }
    if (problems.length > 0)
      throw new Error(`Job handlers do not match the job kinds: ${problems.join('; ')}`);
  }

  /** Kinds this worker can run: exactly one handler. Other kinds' jobs are left to other workers. */
  private runnableKinds(): string[] {
    return [...this.registrations].filter(([, list]) => list.length === 1).map(([kind]) => kind);
  }

  /**
   * Claims the jobs due now (optionally of one account and mode), runs them one after another in
   * due order and returns how many ran (succeeded or failed).
   */
  runDue(options: RunDueOptions = {}): Promise<number> {
    return this.track(this.claimAndRun(options));
  }

  /**
   * Runs these jobs now, whether due or not (a request that must answer with their outcome), one after
   * another, and returns how many this call ran. A job this worker is running already (its poll
   * loop, another runNow) is waited for; one held by another process is not (it is that process's
   * now); one that no longer exists has finished.
   */
  runNow(ids: readonly string[]): Promise<number> {
    return this.track(this.claimAndRunNow(ids));
  }

  /**
   * Resolves once the jobs of this account and mode that this worker holds now (running, queued, or
   * being claimed by its poll loop) have finished, to how many there were. Jobs of other processes
   * are not seen. With runDue, "every due job has run" holds for jobs that the poll loop took first.
   */
  async whenSettled(filter: SettledFilter): Promise<number> {
    // A claim under way may be taking jobs of the account, and jobs taken at their write are being
    // read back: they are in hand once these return.
    await Promise.all([this.claiming, ...this.taking]);
    const matches = this.matcher(filter);
    const running = [...this.runs.values()].filter(({ row }) => matches(row)).map(({ done }) => done);
    // Claimed by the poll loop and waiting for a slot: run now, under the same lease.
    const queued = this.takeQueued(
      new Set(this.queue.filter((job) => matches(job.row)).map((job) => job.row.id)),
    );
    for (const job of queued) await this.track(this.run(job));
    await Promise.allSettled(running);
    return running.length + queued.length;
  }

  private matcher(filter: SettledFilter): (row: JobRow) => boolean {
    const except = new Set((filter.exceptKinds ?? []).map(kindName));
    return (row) =>
      row.account_id === filter.accountId &&
      row.livemode === (filter.livemode ? 1 : 0) &&
      !except.has(row.kind);
  }

  /** Claims its poll loop has made (for tests and benchmarks). */
  pollClaims(): number {
    return this.pollClaimCount;
  }

  /** Jobs this worker took as they were written, with no claim (takeAtWrite; for tests and benchmarks). */
  takenAtWrite(): number {
    return this.takenAtWriteCount;
  }

  /** Outcome transactions this worker committed, and the outcomes they held (group commit; for metrics and tests). */
  outcomeCommits(): { commits: number; works: number } {
    return { ...this.outcomes.stats };
  }

  /** Polls for due jobs until stop(). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.poll();
    this.logger.info(
      { pollIntervalMs: this.pollIntervalMs, kinds: this.runnableKinds() },
      'job worker started',
    );
  }

  /**
   * Stops polling, hands claimed jobs that did not start back, lets running handlers finish for up to
   * graceMs, then aborts their signals (an interrupted job is handed back, due at once) and waits for them.
   */
  async stop(graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    clearTimeout(this.nudgeTimer);
    this.nudgeTimer = undefined;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
    await this.release(this.queue.splice(0));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    for (const job of this.runningJobs) job.controller?.abort(new ShutdownError());
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.stopHeartbeat();
  }

  private async track<T>(task: Promise<T>): Promise<T> {
    this.inFlight.add(task);
    try {
      return await task;
    } finally {
      this.inFlight.delete(task);
    }
  }

  /** The slots of a kind: its own concurrency, else the worker's. */
  private limitOf(kind: string): number {
    return this.registrations.get(kind)?.[0]?.definition.concurrency ?? this.concurrency;
  }

  /**
   * Jobs of a kind claimed beyond its free slots (at most `limit`). None for an at-most-once kind: its
   * claim is what forbids a second run, so a job claimed but never started (its worker died while it
   * waited for a slot) would be given up without having run.
   */
  private prefetchOf(kind: string, limit: number): number {
    if (this.registrations.get(kind)?.[0]?.definition.atMostOnce) return 0;
    return Math.min(this.prefetch, limit);
  }

  /** Jobs of one key claimed beyond the key's free slots: the kind's keyPrefetch, else as prefetchOf. */
  private keyPrefetchOf(kind: string, keyLimit: number): number {
    const definition = this.registrations.get(kind)?.[0]?.definition;
    if (definition?.atMostOnce) return 0;
    return definition?.keyPrefetch ?? this.prefetchOf(kind, keyLimit);
  }

  private keyLimitOf(kind: string): number | undefined {
    return this.registrations.get(kind)?.[0]?.definition.keyConcurrency;
  }

  private count(kind: string): { active: number; queued: number } {
    let queued = 0;
    for (const job of this.queue) if (job.row.kind === kind) queued++;
    return { active: this.active.get(kind) ?? 0, queued };
  }

  /** Whether a claimed job may start now: a free slot of its kind, and of its key if the kind limits keys. */
  private canStart(job: Claimed): boolean {
    return this.hasFreeSlot(job.row.kind, job.row.concurrency_key);
  }

  /**
   * What the next claim may take: for each kind, its free slots plus the prefetch, less what is
   * already queued. Kinds with the same room share one pick; a kind limited per key has its own.
   */
  private picks(): Pick[] {
    const byRoom = new Map<number, string[]>();
    const picks: Pick[] = [];
    for (const kind of this.runnableKinds()) {
      const { active, queued } = this.count(kind);
      const limit = this.limitOf(kind);
      const room = Math.min(this.batchSize, limit + this.prefetchOf(kind, limit) - active - queued);
      if (room <= 0) continue;
      const keyLimit = this.keyLimitOf(kind);
      if (keyLimit === undefined) {
        byRoom.set(room, [...(byRoom.get(room) ?? []), kind]);
        continue;
      }
      const inHand = new Map<string, number>();
      const hold = (key: string | null) => {
        if (key !== null) inHand.set(key, (inHand.get(key) ?? 0) + 1);
      };
      for (const job of this.queue) if (job.row.kind === kind) hold(job.row.concurrency_key);
      const prefix = keyOf(kind, '');
      for (const [key, n] of this.activeByKey) {
        if (key.startsWith(prefix))
          inHand.set(key.slice(prefix.length), (inHand.get(key.slice(prefix.length)) ?? 0) + n);
      }
      const allowance = keyLimit + this.keyPrefetchOf(kind, keyLimit);
      picks.push({ kinds: [kind], limit: room, keyed: { allowance, inHand } });
    }
    return [...picks, ...[...byRoom].map(([limit, kinds]) => ({ kinds, limit }))];
  }

  /**
   * Claims, for each kind with room, only what its free slots and the prefetch can take, and starts
   * jobs as slots free. A kind that was full, or a pick that came back full, means more may be due:
   * the loop claims again as soon as a kind's queue drains; else it sleeps until the next poll.
   */
  private async poll(): Promise<void> {
    while (this.running) {
      const picks = this.picks();
      // A kind without room may have more due; so may a kind whose pick came back full or left a key behind.
      const picked = new Set(picks.flatMap((pick) => pick.kinds));
      const backlog = new Set(this.runnableKinds().filter((kind) => !picked.has(kind)));
      const full = new Set<string>();
      let claimDone: () => void = () => undefined;
      if (picks.length > 0) {
        this.claiming = new Promise<void>((resolve) => (claimDone = resolve));
        try {
          this.pollClaimCount++;
          // A job written for this claim before this point is visible to it (on SQLite it waits for
          // the writer's transaction); one written later keeps its kind's backlog (leftForClaim).
          this.leftForClaim = new Set();
          const claimed = await this.claim({}, picks).finally(() => (this.lastClaimEnd = performance.now()));
          this.queue.push(...claimed);
          for (const pick of picks) {
            const got = claimed.filter((job) => pick.kinds.includes(job.row.kind));
            if (got.length === pick.limit) for (const kind of pick.kinds) full.add(kind);
            if (pick.keyed && keyLeftBehind(pick.keyed, got))
              for (const kind of pick.kinds) backlog.add(kind);
          }
        } catch (error) {
          this.logger.error({ err: error }, 'job worker: polling for due jobs failed');
        }
      }
      this.startQueued();
      // What the claim took is in hand now: queued, or running.
      this.claiming = undefined;
      claimDone();
      this.backlog = new Set([...backlog, ...full, ...this.leftForClaim]);
      const claimAgainNow = this.picks().some((pick) => pick.kinds.some((kind) => full.has(kind)));
      if (this.running && !claimAgainNow) await this.sleep(this.pollIntervalMs);
      this.nudged = false;
    }
  }

  /**
   * A claimed job that waited for its turn until less than half its lease was left (slow jobs ahead of
   * it) is not started: its lease could end mid-run, or has ended and another worker took it over. It
   * is handed back instead (`release`, a no-op if it was taken over), due at once. A batch normally
   * starts within milliseconds of its claim.
   */
  private startsTooLate(job: Claimed): boolean {
    return this.clock.now().getTime() >= job.lease - this.leaseMs / 2;
  }

  /** Starts queued jobs while their kinds have free slots (see startsTooLate). */
  private startQueued(): void {
    // Once stopping, nothing new starts: stop() hands the queue back.
    for (const job of [...this.queue]) {
      if (!this.running) return;
      if (!this.canStart(job)) continue;
      this.queue.splice(this.queue.indexOf(job), 1);
      if (this.startsTooLate(job)) {
        void this.track(this.release([job])).catch((error: unknown) =>
          this.logger.error({ err: error, job_id: job.row.id }, 'job worker: handing a job back failed'),
        );
        continue;
      }
      this.begin(job, this.holdSlot(job.row.kind, job.row.concurrency_key));
    }
  }

  /** Takes a slot of a kind, and of its key if it has one. Returns what gives the slot back. */
  private holdSlot(kind: string, concurrencyKey: string | null): () => void {
    const key = concurrencyKey === null ? undefined : keyOf(kind, concurrencyKey);
    this.active.set(kind, (this.active.get(kind) ?? 0) + 1);
    if (key !== undefined) this.activeByKey.set(key, (this.activeByKey.get(key) ?? 0) + 1);
    return () => {
      this.active.set(kind, (this.active.get(kind) ?? 1) - 1);
      if (key === undefined) return;
      const left = (this.activeByKey.get(key) ?? 1) - 1;
      if (left > 0) this.activeByKey.set(key, left);
      else this.activeByKey.delete(key);
    };
  }

  /** Runs a job in the slot it holds (holdSlot), which goes to the next job when its outcome is handed over. */
  private begin(job: Claimed, giveSlotBack: () => void): void {
    const kind = job.row.kind;
    const keyed = job.row.concurrency_key !== null;
    job.freeSlot = () => {
      job.freeSlot = undefined;
      giveSlotBack();
      this.startQueued();
      // The prefetch of the kind (of the key, for a kind limited per key) is used up and more may
      // be due: claim now, not at the next poll. Not at every finish: one claim serves a few jobs.
      // A kind without prefetch (at most once) claims once half its slots are free.
      const same = (q: Claimed) =>
        q.row.kind === kind && (!keyed || q.row.concurrency_key === job.row.concurrency_key);
      const limit = this.limitOf(kind);
      const claimNow =
        this.prefetchOf(kind, limit) > 0
          ? !this.queue.some(same)
          : limit - (this.active.get(kind) ?? 0) >= Math.ceil(limit / 2);
      if (this.backlog.has(kind) && claimNow) this.wake?.();
    };
    void this.track(this.run(job))
      .catch((error: unknown) =>
        this.logger.error({ err: error, job_id: job.row.id }, 'job worker: recording a job outcome failed'),
      )
      .finally(() => job.freeSlot?.());
  }

  /**
   * Offered a job that this process is writing now (SQLite; see onLocalJobWrite in wakeup.ts): takes it
   * when it is due, its kind and key have a free slot now, and the poll loop is keeping up with the kind
   * (no backlog of it left by its last claim, no job of it waiting for a slot), so that the job does not
   * pass older ones. The job is written with this worker's lease, so its claim (a write and a commit of
   * its own) is saved, and it starts as soon as the writer's transaction has committed.
   *
   * When no slot of the job's kind or key is free, it answers without a lease: the job is written
   * unclaimed, and the claim this worker makes as a slot frees (once what it claimed ahead has started,
   * see begin) takes it, with whatever else was written meanwhile. The write's wake-up would make a
   * claim for this one job, which would wait for the slot all the same: one claim (a write and a commit
   * of its own) per write while a receiver is slower than the writes. So it is let pass.
   */
  takeAtWrite(job: JobOnOffer): WriteOffer | undefined {
    const { kind, concurrency_key: key } = job;
    if (!this.running || this.registrations.get(kind)?.length !== 1) return undefined;
    if (job.due_at > this.clock.now().getTime()) return undefined;
    if (!this.hasFreeSlot(kind, key)) {
      return { lease: undefined, written: () => this.claimAsSlotFrees(kind), failed: () => undefined };
    }
    if (this.backlog.has(kind) || this.queue.some((queued) => queued.row.kind === kind)) return undefined;
    return this.take(job);
  }

  private take(job: JobOnOffer): TakenAtWrite {
    const giveSlotBack = this.holdSlot(job.kind, job.concurrency_key);
    const lease = this.clock.now().getTime() + this.leaseMs;
    let settled = false;
    const giveUp = () => {
      if (settled) return;
      settled = true;
      giveSlotBack();
      this.startQueued();
    };
    return {
      lease,
      failed: giveUp,
      written: () => {
        const taking = this.startTaken(job.id, lease, giveSlotBack, giveUp);
        this.taking.add(taking);
        void this.track(taking).finally(() => this.taking.delete(taking));
      },
    };
  }

  /**
   * A job was written unclaimed for the claim this worker makes as a slot frees (takeAtWrite): that
   * claim must come (the kind's backlog), and the write's wake-up, which the writer sends right after
   * this in the same turn, is let pass.
   */
  private claimAsSlotFrees(kind: string): void {
    this.backlog.add(kind);
    this.leftForClaim.add(kind);
    // A claim under way began before the write and may not see it, and a slot freed meanwhile wakes no
    // one: the wake-up then makes the claim that follows.
    this.passNextNudge = this.claiming === undefined;
    queueMicrotask(() => (this.passNextNudge = false));
  }

  /** A job taken at its write: read back once the writer's transaction has ended, and run if it committed. */
  private async startTaken(
    id: string,
    lease: number,
    giveSlotBack: () => void,
    giveUp: () => void,
  ): Promise<void> {
    let row: JobRow | undefined;
    try {
      [row] = await selectTakenJob(this.db.kysely, id, lease);
    } catch (error) {
      this.logger.error({ err: error, job_id: id }, 'job worker: reading a job taken at its write failed');
    }
    if (!row) {
      // Rolled back (or unreadable: its lease runs out and a claim takes it).
      giveUp();
      return;
    }
    const job: Claimed = { row, lease };
    if (!this.running) {
      giveUp();
      await this.release([job]);
      return;
    }
    this.takenAtWriteCount++;
    this.begin(job, giveSlotBack);
  }

  /** Whether a job of this kind and key could start now. */
  private hasFreeSlot(kind: string, concurrencyKey: string | null): boolean {
    if ((this.active.get(kind) ?? 0) >= this.limitOf(kind)) return false;
    const keyLimit = this.keyLimitOf(kind);
    if (keyLimit === undefined || concurrencyKey === null) return true;
    return (this.activeByKey.get(keyOf(kind, concurrencyKey)) ?? 0) < keyLimit;
  }

  /**
   * A job became due (a wake-up, see wakeup.ts): an idle worker polls at once instead of at its next
   * tick, or, when its last claim ended less than the spacing (NUDGE_SPACING_MS) ago, once it has: the
   * jobs of a burst (one per request) are claimed a few at a time instead of with a claim each.
   */
  nudge(): void {
    if (this.passNextNudge) {
      this.passNextNudge = false;
      return;
    }
    this.nudged = true;
    const wait = this.spacingLeft();
    if (wait <= 0) {
      this.wake?.();
      return;
    }
    this.nudgeTimer ??= setTimeout(() => {
      this.nudgeTimer = undefined;
      this.wake?.();
    }, wait);
  }

  /** How long until a wake-up may start a claim (the spacing after the last claim ended). */
  private spacingLeft(): number {
    return this.lastClaimEnd + this.nudgeSpacingMs - performance.now();
  }

  private sleep(ms: number): Promise<void> {
    let wait = ms;
    if (this.nudged) {
      this.nudged = false;
      wait = Math.min(ms, this.spacingLeft());
      if (wait <= 0) return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(this.timer);
        resolve();
      };
      this.wake = done;
      this.timer = setTimeout(done, wait);
    });
  }

  private async claimAndRun(options: RunDueOptions): Promise<number> {
    const claimed = await this.claim(options);
    let ran = 0;
    for (const job of claimed) {
      if (this.startsTooLate(job)) {
        await this.release([job]);
        continue;
      }
      await this.run(job);
      ran++;
    }
    return ran;
  }

  private async claimAndRunNow(ids: readonly string[]): Promise<number> {
    // Jobs taken at their write are this worker's: once read back, they are running (waited for below).
    await Promise.all([...this.taking]);
    const wanted = new Set(ids);
    const free = [...wanted].filter(
      (id) => !this.runs.has(id) && !this.queue.some((job) => job.row.id === id),
    );
    const claimed = [...this.takeQueued(wanted), ...(await this.claimByIds(free))];
    claimed.sort((a, b) => a.row.due_at - b.row.due_at || (a.row.id < b.row.id ? -1 : 1));
    for (const job of claimed) await this.run(job);
    // The rest may be this worker's already: its poll loop may be claiming them right now.
    await this.claiming;
    const late = this.takeQueued(wanted);
    for (const job of late) await this.run(job);
    const running = [...wanted].map((id) => this.runs.get(id)?.done).filter((done) => done !== undefined);
    await Promise.allSettled(running);
    return claimed.length + late.length;
  }

  /** Takes the poll loop's queued jobs with these ids, to run them now under the same lease. */
  private takeQueued(ids: ReadonlySet<string>): Claimed[] {
    const taken = this.queue.filter((job) => ids.has(job.row.id));
    this.queue = this.queue.filter((job) => !ids.has(job.row.id));
    return taken;
  }

  /** Claims these jobs (due or not) when no worker holds them. */
  private async claimByIds(ids: readonly string[]): Promise<Claimed[]> {
    const kinds = this.runnableKinds();
    if (ids.length === 0 || kinds.length === 0) return [];
    const now = this.clock.now().getTime();
    const lease = now + this.leaseMs;
    const rows = await this.db.kysely
      .updateTable('jobs')
      .set((eb) => ({ locked_until: lease, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', ids)
      .where('kind', 'in', kinds)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
      .returningAll()
      .execute();
    return rows.map((row) => ({ row, lease }));
  }

  /** Runs a claimed job, known by id (runs) until it has finished. */
  private run(job: Claimed): Promise<void> {
    const done = this.runOne(job).finally(() => {
      if (this.runs.get(job.row.id)?.done === done) this.runs.delete(job.row.id);
    });
    this.runs.set(job.row.id, { row: job.row, done });
    return done;
  }

  private async claim(options: RunDueOptions, picks?: Pick[]): Promise<Claimed[]> {
    const except = new Set((options.exceptKinds ?? []).map(kindName));
    const kinds = this.runnableKinds().filter((kind) => !except.has(kind));
    if (kinds.length === 0) return [];
    const limit = Math.max(1, Math.floor(options.limit ?? this.batchSize));
    const chosen = picks ?? [{ kinds, limit }];
    if (chosen.length === 0) return [];
    const now = this.clock.now().getTime();
    const lease = now + this.leaseMs;
    const postgres = this.db.dialect === 'postgres';

    // What makes a job claimable beside being due: no live lease, the run's account and mode, not held
    // here. Columns are named through `column` (bare, or of an alias).
    const claimable = (kinds: readonly string[], column: (name: string) => RawBuilder<unknown>) => {
      const filters: RawBuilder<unknown>[] = [
        notGivenUp(column),
        sql`(${column('locked_until')} is null or ${column('locked_until')} < ${now})`,
      ];
      if (options.accountId !== undefined) filters.push(sql`${column('account_id')} = ${options.accountId}`);
      if (options.livemode !== undefined)
        filters.push(sql`${column('livemode')} = ${options.livemode ? 1 : 0}`);
      // A queued job whose lease ran out is due again, but not for this worker, which holds it.
      const held = this.queue.filter((job) => kinds.includes(job.row.kind)).map((job) => job.row.id);
      if (held.length > 0) filters.push(sql`${column('id')} not in (${sql.join(held)})`);
      return sql.join(filters, sql` and `);
    };
    const bare = (name: string) => sql.ref(name);
    const ofAlias = (alias: string) => (name: string) => sql.ref(`${alias}.${name}`);
    const lock = postgres ? sql` for update skip locked` : sql``;
    const materialized = postgres ? sql`materialized ` : sql``;
    const saturatedKeys = (keyed: Pick['keyed']) =>
      [...(keyed?.inHand ?? [])].filter(([, n]) => n >= (keyed?.allowance ?? 0)).map(([key]) => key);

    // Each pick: its kinds' due rows, oldest first. On PostgreSQL each row is locked as it is picked
    // (SKIP LOCKED: rows another worker is claiming right now are passed over, not waited for), in a
    // materialised CTE so the pick runs exactly once. SQLite takes its one write lock for the whole
    // statement.
    const walk = ({ kinds, limit: most }: Pick): RawBuilder<unknown> =>
      sql`select id, due_at, concurrency_key from jobs where kind in (${sql.join(kinds)}) and due_at <= ${now} and ${claimable(kinds, bare)} order by due_at, id limit ${most}${lock}`;

    // A kind limited per key, with keys of which this worker holds its whole allowance: their due
    // jobs may be the whole front of the kind's backlog (an endpoint thousands of deliveries behind),
    // which the walk above would pass over one by one at every claim. Instead the kind's queues (its
    // kind and key as one value, `kind/key`, indexed with due_at and id: jobs_queue_due_id) are found
    // by a skip scan, one seek each, and each other queue's oldest due jobs read from its own range:
    // the cost follows how many keys have jobs of the kind, not how many jobs they have.
    const perKey = (i: number, { kinds, limit: most, keyed }: Pick): RawBuilder<unknown>[] => {
      const kind = kinds[0] ?? '';
      const queues = sql.id(`queues${i}`);
      const heads = sql.id(`heads${i}`);
      const due = sql.id(`due${i}`);
      const allowance = keyed?.allowance ?? 1;
      // As jobs_queue_due_id has it: compared byte by byte on both databases.
      const queue = (alias: string) =>
        sql.raw(
          postgres
            ? `((${alias}.kind || '/' || coalesce(${alias}.concurrency_key, '')) collate "C")`
            : `(${alias}.kind || '/' || coalesce(${alias}.concurrency_key, ''))`,
        );
      // The kind's keyed queues sort after `kind/` (its jobs without a key) and before `kind0` ('0'
      // follows '/').
      const unkeyedQueue = `${kind}/`;
      const pastKind = `${kind}0`;
      const saturated = saturatedKeys(keyed).map((key) => `${kind}/${key}`);
      const dueIn = (alias: string, q: RawBuilder<unknown>) =>
        sql`${queue(alias)} = ${q} and ${sql.ref(`${alias}.due_at`)} <= ${now} and ${claimable(kinds, ofAlias(alias))}`;
      // Each queue's oldest due jobs; on PostgreSQL locked as they are read (SKIP LOCKED, as the walk),
      // so a queue's rows another worker is claiming are passed over for its next ones.
      const oldest = postgres
        ? sql`select y.id, y.due_at, y.concurrency_key from ${heads} h cross join lateral (select z.id, z.due_at, z.concurrency_key from jobs z where ${dueIn('z', sql`h.q`)} order by z.due_at, z.id limit ${allowance}${lock}) y`
        : sql`select y.id, y.due_at, y.concurrency_key from ${heads} h join jobs y on y.id in (select z.id from jobs z where ${dueIn('z', sql`h.q`)} order by z.due_at, z.id limit ${allowance})`;
      // Jobs of the kind without a key are taken as the walk takes them.
      const unkeyed = sql`select * from (select j.id, j.due_at, j.concurrency_key from jobs j where ${dueIn('j', sql`${unkeyedQueue}`)} and j.concurrency_key is null order by j.due_at, j.id limit ${most}${lock}) unkeyed`;
      return [
        sql`${queues}(q) as (select (select ${queue('j')} from jobs j where ${queue('j')} > ${unkeyedQueue} and ${queue('j')} < ${pastKind} and ${notGivenUp(ofAlias('j'))} order by 1 limit 1) union all select (select ${queue('j')} from jobs j where ${queue('j')} > q and ${queue('j')} < ${pastKind} and ${notGivenUp(ofAlias('j'))} order by 1 limit 1) from ${queues} where q is not null)`,
        sql`${heads} as (select q, head from (select q, (select j.due_at from jobs j where ${dueIn('j', sql`q`)} order by j.due_at, j.id limit 1) as head from ${queues} where q is not null and q not in (${sql.join(saturated)})) keyed where head is not null order by head, q limit ${most})`,
        sql`${due} as ${materialized}(${oldest} union all ${unkeyed})`,
      ];
    };
    // A kind limited per key takes, of its oldest due jobs, at most each key's allowance less what
    // this worker holds of that key.
    const allowed = ({ allowance, inHand }: NonNullable<Pick['keyed']>): RawBuilder<unknown> => {
      const partial = [...inHand].filter(([, n]) => n < allowance);
      if (partial.length === 0) return sql`cast(${allowance} as integer)`;
      const cases = partial.map(([key, n]) => sql`when ${key} then cast(${allowance - n} as integer)`);
      return sql`case concurrency_key ${sql.join(cases, sql` `)} else cast(${allowance} as integer) end`;
    };
    const perKeyPick = (p: Pick) => p.keyed !== undefined && saturatedKeys(p.keyed).length > 0;
    const ctes = chosen.flatMap((p, i) => {
      const name = sql.id(`pick${i}`);
      if (!p.keyed) return [sql`${name} as ${materialized}(${walk(p)})`];
      const candidates = sql.id(`due${i}`);
      const ranked = sql`${name} as (select id from (select id, due_at, concurrency_key, row_number() over (partition by concurrency_key order by due_at, id) as rn from ${candidates}) ranked where concurrency_key is null or rn <= ${allowed(p.keyed)} order by due_at, id limit ${p.limit})`;
      return perKeyPick(p)
        ? [...perKey(i, p), ranked]
        : [sql`${candidates} as ${materialized}(${walk(p)})`, ranked];
    });
    const union = sql.join(
      chosen.map((_, i) => sql`select id from ${sql.id(`pick${i}`)}`),
      sql` union all `,
    );
    // One statement, so picking and locking are one round trip and one lock. (On SQLite, no
    // multi-statement transaction either: another connection in this process would have to wait
    // synchronously for it, blocking the event loop that must finish it.)
    const result =
      await sql<JobRow>`with ${chosen.some(perKeyPick) ? sql`recursive ` : sql``}${sql.join(ctes)}
      update jobs set locked_until = ${lease}, attempts = attempts + 1
      where id in (${union})
      returning *`.execute(this.db.kysely);
    const rows = result.rows;
    rows.sort((a, b) => a.due_at - b.due_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return rows.map((row) => ({ row, lease }));
  }

  private async runOne(job: Claimed): Promise<void> {
    const { row } = job;
    const registration = this.registrations.get(row.kind)?.[0];
    const context = { job_id: row.id, kind: row.kind, account_id: row.account_id, attempt: row.attempts };
    if (row.attempts > MAX_ATTEMPTS) {
      // Claimed again after its last attempt never reported back (the process died mid-job).
      await this.settle(job, 'give_up', new Error('the last attempt did not finish (worker died?)'));
      return;
    }
    const atMostOnce = registration?.definition.atMostOnce ?? false;
    if (atMostOnce && row.attempts - 1 > row.unsent_attempts) {
      // An earlier claim was neither handed back nor recorded as failed before its send: its handler
      // may have sent, so this one must not.
      await this.settle(job, 'give_up', new Error('an earlier attempt may have run (at most once)'));
      return;
    }
    const controller = new AbortController();
    job.controller = controller;
    this.runningJobs.add(job);
    this.startHeartbeat();
    // Claimed ahead, it waited in the queue for a third of its lease or more: renewed now rather than
    // at the next heartbeat, which could come after the lease ran out under load.
    if (job.lease - this.clock.now().getTime() < (this.leaseMs * 2) / 3) this.renewSoon();
    try {
      if (!registration) throw new Error(`no handler for job kind "${row.kind}"`);
      const parsed = registration.definition.schema.safeParse(JSON.parse(row.payload));
      if (!parsed.success) throw new Error(`invalid payload: ${parsed.error.message}`);
      await traced(row, () =>
        withDeadline(
          registration.handler({
            id: row.id,
            accountId: row.account_id,
            livemode: row.livemode === 1,
            kind: row.kind,
            subjectId: row.subject_id,
            payload: parsed.data,
            attempts: row.attempts - 1,
            signal: controller.signal,
            complete: (trx) => this.complete(job, trx),
            finish: (work) => this.finish(job, work),
            finishInOne: (end) => this.finishInOne(job, end),
            beginIrreversible: () => {
              controller.signal.throwIfAborted();
              job.irreversible = true;
            },
          }),
          controller,
          registration.definition.timeoutMs ?? this.jobTimeoutMs,
        ),
      );
    } catch (error) {
      this.runningJobs.delete(job);
      // An at-most-once run may be handed back or retried only if its kind marks where the send
      // begins and it had not begun.
      const unsent = atMostOnce && registration?.definition.marksIrreversible === true && !job.irreversible;
      const repeatable = !atMostOnce || unsent;
      if (controller.signal.reason instanceof ShutdownError && repeatable) {
        // Cut short by the shutdown: nothing is known of the attempt (or, at most once, nothing was
        // sent), so it is not counted.
        this.logger.info(context, 'job interrupted by shutdown; handed back');
        await this.release([job]);
        return;
      }
      this.logger.warn({ ...context, err: error }, 'job failed');
      const last = !repeatable || retryDelayMs(row.attempts) === null;
      jobRuns.inc({ kind: row.kind, outcome: last ? 'failed' : 'retry' });
      jobFailures.inc({ kind: row.kind });
      await this.settle(job, last ? 'give_up' : 'retry', error, unsent);
      return;
    }
    this.runningJobs.delete(job);
    jobRuns.inc({ kind: row.kind, outcome: 'succeeded' });
    if (!job.completed) await this.settle(job, 'done');
  }

  /**
   * The handler hands its outcome over (finish, finishInOne): its slot goes to the next job while the
   * outcome is recorded (on SQLite with the outcomes of others finishing meanwhile, in one commit), and
   * its lease is no longer renewed. A renewal begun after the outcome's fence was taken would move the
   * lease from under it (the outcome's statement runs on another connection on PostgreSQL) and the job
   * would count as lost; one already under way is in the fence (fenceOf).
   */
  private handOver(job: Claimed): void {
    job.settling = true;
    job.freeSlot?.();
  }

  /** complete()'s fence: both leases while a renewal is under way (either may be on the row). */
  private fenceOf(job: Claimed): JobFence {
    const leases = job.renewingTo === undefined ? [job.lease] : [job.lease, job.renewingTo];
    return { id: job.row.id, leases };
  }

  private async finishInOne<T>(
    job: Claimed,
    end: (fence: JobFence) => Promise<{ ended: boolean; value: T }>,
  ): Promise<T> {
    this.handOver(job);
    const { ended, value } = await end(this.fenceOf(job));
    if (!ended) throw new JobLeaseLostError(job.row.id);
    job.completed = true;
    return value;
  }

  private async complete(job: Claimed, trx: Kysely<Database>): Promise<void> {
    // The fence of fenceOf: the lease, and while a renewal is under way the one it renews to.
    const ended = await deleteLeasedJob(trx, job.row.id, job.lease, job.renewingTo ?? job.lease);
    if (ended.length === 0) throw new JobLeaseLostError(job.row.id);
    job.completed = true;
  }

  /** complete() fences by both leases while a renewal is under way, so finish need not wait for it. */
  private finish<T>(job: Claimed, work: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
    this.handOver(job);
    return this.outcomes.run(async (trx) => {
      await this.complete(job, trx);
      return work(trx);
    });
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(
      () => {
        if (this.runningJobs.size === 0) {
          this.stopHeartbeat();
          return;
        }
        this.renewing = this.renewing.then(() => this.renewLeases());
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }

  /**
   * Moves the leases of running jobs on, so a handler that takes longer than the lease (a webhook's
   * 30 s against a lease of seconds) is not taken over while this process lives, and a dead process's
   * jobs are still taken over one lease after its last renewal. Fenced like every outcome: a lease
   * already lost stays lost.
   */
  /** Renews the running jobs' leases once the renewal under way (if any) is over; one queued at most. */
  private renewSoon(): void {
    if (this.renewalQueued) return;
    this.renewalQueued = true;
    this.renewing = this.renewing.then(() => {
      this.renewalQueued = false;
      return this.renewLeases();
    });
  }

  private async renewLeases(): Promise<void> {
    const byLease = new Map<number, Claimed[]>();
    for (const job of this.runningJobs) {
      if (job.settling || job.completed) continue;
      byLease.set(job.lease, [...(byLease.get(job.lease) ?? []), job]);
    }
    const lease = this.clock.now().getTime() + this.leaseMs;
    const groups = [...byLease].filter(([old]) => old < lease);
    // Every job of the renewal carries the new lease in its fence before the first update goes out: an
    // outcome taken while an earlier group's update is under way is then recorded under either lease,
    // whichever its row carries when the outcome's statement arrives (on PostgreSQL the two run on
    // different connections).
    for (const [, jobs] of groups) for (const job of jobs) job.renewingTo = lease;
    for (const [old, jobs] of groups) {
      try {
        const renewed = await this.db.kysely
          .updateTable('jobs')
          .set({ locked_until: lease })
          .where('locked_until', '=', old)
          .where(
            'id',
            'in',
            jobs.map((job) => job.row.id),
          )
          .returning('id')
          .execute();
        const ids = new Set(renewed.map((r) => r.id));
        for (const job of jobs) if (ids.has(job.row.id)) job.lease = lease;
      } catch (error) {
        this.logger.warn({ err: error }, 'job worker: renewing leases failed');
      } finally {
        for (const job of jobs) job.renewingTo = undefined;
      }
    }
  }

  /**
   * Records the outcome, only while the row still carries our lease. Errors are logged: the lease then
   * expires and the job runs again. `unsent`: a retry of an at-most-once attempt that failed before its
   * send began, counted as such in the row.
   */
  private async settle(
    job: Claimed,
    outcome: 'done' | 'retry' | 'give_up',
    error?: unknown,
    unsent = false,
  ): Promise<void> {
    job.settling = true;
    await this.renewing;
    const { row, lease } = job;
    const db = this.db.kysely;
    const context = { job_id: row.id, kind: row.kind, account_id: row.account_id, attempts: row.attempts };
    try {
      let changed: bigint;
      if (outcome === 'done') {
        const end = (trx: Kysely<Database>) =>
          trx
            .deleteFrom('jobs')
            .where('id', '=', row.id)
            .where('locked_until', '=', lease)
            .executeTakeFirst();
        // One statement needs no transaction of its own where outcomes do not share one.
        const result = await (this.outcomes.shared ? this.outcomes.run(end) : end(db));
        changed = result.numDeletedRows;
      } else if (outcome === 'retry') {
        const now = this.clock.now().getTime();
        const delay = retryDelayMs(row.attempts) ?? 0;
        const result = await db
          .updateTable('jobs')
          .set({
            last_error: describeError(error),
            due_at: now + delay,
            locked_until: null,
            // Every attempt so far ended before its send: this one now, the earlier ones already
            // (else this claim would have been given up).
            ...(unsent ? { unsent_attempts: row.attempts } : {}),
          })
          .where('id', '=', row.id)
          .where('locked_until', '=', lease)
          .executeTakeFirst();
        changed = result.numUpdatedRows;
      } else {
        changed = await this.giveUp(job, error);
        if (changed > 0n) {
          this.logger.error(
            { ...context, err: error },
            `job given up after ${row.attempts} attempt${row.attempts === 1 ? '' : 's'}`,
          );
        }
      }
      if (changed === 0n) {
        this.logger.warn(
          context,
          'job lease lost before the outcome was recorded (cancelled, or taken over after expiry)',
        );
      }
    } catch (settleError) {
      this.logger.error(
        { ...context, err: settleError },
        'recording the job outcome failed; it runs again after its lease',
      );
    }
  }
  /** Marks the job given up (fenced by the lease) and, in the same transaction, runs its kind's hook. */
  private giveUp(job: Claimed, error: unknown): Promise<bigint> {
    const { row, lease } = job;
    const onGiveUp = this.registrations.get(row.kind)?.[0]?.onGiveUp;
    return this.db.kysely.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('jobs')
        // The row stays for inspection, but its unique key is freed: a job given up on must not keep
        // later work of the same key (the next owner notice, the next digest) from being queued.
        .set({ last_error: describeError(error), locked_until: GAVE_UP_LOCKED_UNTIL, unique_key: null })
        .where('id', '=', row.id)
        .where('locked_until', '=', lease)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n || !onGiveUp) return result.numUpdatedRows;
      const parsed = this.registrations
        .get(row.kind)?.[0]
        ?.definition.schema.safeParse(parsePayload(row.payload));
      // A payload its kind cannot read names no subject to tell.
      if (!parsed?.success) return result.numUpdatedRows;
      await onGiveUp(
        {
          id: row.id,
          accountId: row.account_id,
          livemode: row.livemode === 1,
          kind: row.kind,
          subjectId: row.subject_id,
          payload: parsed.data,
          attempts: row.attempts,
          error,
        },
        trx,
      );
      return result.numUpdatedRows;
    });
  }

  /** Hands claimed jobs that did not start back (stopping, or waited too long): due at once, attempt not counted. */
  private async release(jobs: Claimed[]): Promise<void> {
    for (const job of jobs) job.settling = true;
    await this.renewing;
    for (const { row, lease } of jobs) {
      await this.db.kysely
        .updateTable('jobs')
        .set((eb) => ({ locked_until: null, attempts: eb('attempts', '-', 1) }))
        .where('id', '=', row.id)
        .where('locked_until', '=', lease)
        .execute();
    }
  }
}

const tracer = trace.getTracer('intake-jobs');

/**
 * Runs a job's attempt in a span of its own, a child of the span that enqueued it (the request's,
 * carried in trace_context), so one trace shows a request and the work it caused. Without tracing
 * (no SDK started) these are no-ops.
 */
function traced<T>(row: JobRow, run: () => Promise<T>): Promise<T> {
  const parent = row.trace_context
    ? propagation.extract(ROOT_CONTEXT, { traceparent: row.trace_context })
    : ROOT_CONTEXT;
  return tracer.startActiveSpan(
    `job ${row.kind}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { 'job.id': row.id, 'job.kind': row.kind, 'job.attempt': row.attempts },
    },
    parent,
    async (span) => {
      try {
        return await run();
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function keyOf(kind: string, key: string): string {
  return `${kind}\u0000${key}`;
}

function describeError(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return text.slice(0, 4_000);
}

/**
 * The handler's outcome, or a failure once `ms` have passed: its signal is then aborted so that it
 * stops (a timed-out handler that kept going could act after its job was retried elsewhere).
 */
function withDeadline<T>(work: Promise<T>, controller: AbortController, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`the handler did not finish within ${ms} ms`);
      error.name = 'TimeoutError';
      controller.abort(error);
      reject(error);
    }, ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

// A job taken at its write, read back with the lease it was written with: compiled once.
const selectTakenJob = preparedQuery(
  (db: Kysely<Database>, id: string, lease: number) =>
    db.selectFrom('jobs').selectAll().where('id', '=', id).where('locked_until', '=', lease),
  ['id', -1],
);

// Every job's end (complete): compiled once. Its lease, or during a renewal either of two (with no
// renewal under way both are the lease).
const deleteLeasedJob = preparedQuery(
  (db: Kysely<Database>, id: string, lease: number, renewal: number) =>
    db.deleteFrom('jobs').where('id', '=', id).where('locked_until', 'in', [lease, renewal]).returning('id'),
  ['id', -1, -2],
);
