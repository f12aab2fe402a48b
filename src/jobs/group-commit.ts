import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { Batcher, type BatchOutcome, type Gathering } from '../lib/batcher.js';

/** Work recorded in a shared transaction: its statements, run in the order they were handed in. */
export type GroupWork<T> = (trx: Kysely<Database>) => Promise<T>;

/** Outcomes recorded at most by one transaction: bounds how long one commit holds its rows. */
export const GROUP_COMMIT_MAX = 64;

/**
 * How long a shared transaction waits at most for the outcomes of work still under way (see
 * GroupCommit). A job's slot is given back when its outcome is handed over, not when it is committed,
 * so the wait holds up no job; it only delays when the outcome can be read.
 */
export const GROUP_COMMIT_GATHER_MS = 4;

/**
 * Group commit: many small transactions recorded as one, where that is cheaper, batched as Batcher
 * batches: the first work handed in is recorded at the end of the current turn of the event loop
 * (outcomes read in the same turn join it); whatever is handed in while that transaction runs waits
 * for it and is recorded together in the next.
 *
 * Shared (SQLite): its one connection runs one transaction at a time anyway, and a commit (its pages
 * written to the WAL) is the largest part of a small transaction, so many outcomes pay one commit.
 * The connection is synchronous, so nothing is handed in while a transaction runs: outcomes arriving
 * one per turn (replies to a few requests in flight) would each have a commit of their own. With
 * `gathering` (whether work that will hand an outcome in is under way), a transaction first waits for
 * those outcomes, up to its `ms` (the worker's default: GROUP_COMMIT_GATHER_MS) or until it is full;
 * with nothing under way, an outcome is recorded at the end of its turn as before.
 * Not shared (PostgreSQL): each work runs at once in a transaction of its own, on its own pooled
 * connection. There the works of one transaction would run one after another, each statement a round
 * trip, where separate transactions run side by side; and the server already flushes the WAL once for
 * the commits that wait together.
 *
 * A batch runs its works one after another in one transaction. When one throws, the batch is rolled
 * back and each work is recorded again alone, in a transaction of its own, so that it fails alone (no
 * savepoints: each would cost two more statements for a case that is rare). A work may therefore run
 * twice: it must only use the transaction it is given. A promise resolves once its work is committed,
 * and rejects with the work's own error, or the commit's.
 */
export class GroupCommit {
  private readonly batches: Batcher<GroupWork<unknown>, unknown>;
  /** Transactions committed, and the works they recorded (a batch that fell back counts each alone). */
  readonly stats = { commits: 0, works: 0 };

  constructor(
    private readonly db: Kysely<Database>,
    /** Whether works share transactions (see above); when not, each runs at once in its own. */
    readonly shared: boolean,
    /** Whether more works are on their way, and how long to wait for them (see above; shared only). */
    gathering?: Gathering,
    max = GROUP_COMMIT_MAX,
  ) {
    this.batches = new Batcher((works) => this.commit(works), max, gathering);
  }

  run<T>(work: GroupWork<T>): Promise<T> {
    if (!this.shared) return this.alone(work);
    return this.batches.run(work) as Promise<T>;
  }

  /** The works in one transaction; if that fails, each again in one of its own, so it fails alone. */
  private async commit(works: GroupWork<unknown>[]): Promise<BatchOutcome<unknown>[]> {
    if (works.length > 1) {
      const values: unknown[] = [];
      const together = await this.db
        .transaction()
        .execute(async (trx) => {
          for (const work of works) values.push(await work(trx));
        })
        .then(
          () => true,
          () => false,
        );
      if (together) {
        this.stats.commits++;
        this.stats.works += works.length;
        return values.map((value) => ({ ok: true, value }));
      }
    }
    const outcomes: BatchOutcome<unknown>[] = [];
    for (const work of works) {
      outcomes.push(
        await this.alone(work).then(
          (value) => ({ ok: true, value }) as const,
          (error: unknown) => ({ ok: false, error }) as const,
        ),
      );
    }
    return outcomes;
  }

  private async alone<T>(work: GroupWork<T>): Promise<T> {
    const value = await this.db.transaction().execute(work);
    this.stats.commits++;
    this.stats.works++;
    return value;
  }
}
