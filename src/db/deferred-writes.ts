import { sql, type Expression } from 'kysely';

/**
 * Writes that ride on the next statement (PostgreSQL).
 *
 * Inside a transaction, an insert whose result nobody reads need not cost a round trip of its own. A
 * write marked `deferrable` is kept by the connection until the transaction's next statement, then sent
 * with it as one statement: PostgreSQL runs data-modifying `WITH` clauses to completion with the
 * statement that carries them (`with w0 as (insert …), w1 as (insert …) select …`). A statement carries
 * them when it is a `select`, `insert`, `update` or `delete` that names none of their tables, since the
 * statement reads the snapshot taken before them; any other statement (a `commit`, a read of one of
 * those tables) is preceded by the writes sent together as one statement. A `rollback` drops them.
 * Outside a transaction a marked write runs at once. SQLite runs every statement at once: there a
 * statement costs no round trip.
 *
 * What the caller gives up: the write's own result (an insert's count is not known), and the place of
 * its error. A deferred write that fails (a broken constraint) fails the statement that carries it, or
 * the commit, and with it the transaction, as it would have from its own place.
 */

/** The comment that marks a statement deferrable: at its very end, where `modifyEnd` puts it. */
export const DEFERRABLE_MARK = '/* deferrable */';

/** A query builder that can be given a clause at its end. Only inserts are deferred: any other statement so marked runs at once. */
export interface EndModifiable<Q> {
  modifyEnd(modifier: Expression<unknown>): Q;
}

/** Marks a write whose result the caller does not read as one that may ride on the next statement. */
export function deferrable<Q extends EndModifiable<Q>>(query: Q): Q {
  return query.modifyEnd(sql.raw(DEFERRABLE_MARK));
}

/** A statement as sent: its text with `$n` placeholders, and their values. */
export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * Statements that go out together and cost one round trip (sent by pg-units.ts): the caller's own
 * (`main`), with a statement without parameters before it (a `begin`) or after it (a `commit`).
 */
export interface StatementUnit {
  /** A statement without parameters run first (a `begin`). */
  before?: string;
  /** The statement whose result is the answer; named when `name` is given. */
  main: Statement & { name?: string };
  /** A statement without parameters run last (a `commit`). */
  after?: string;
}

/** Whether `text` was marked with `deferrable`. */
export function isDeferrable(text: string): boolean {
  return text.endsWith(DEFERRABLE_MARK) && /^\s*insert\s/i.test(text);
}

/** The table a deferrable insert writes (`insert into "name"`), without its quotes or schema. */
function tableOf(text: string): string | undefined {
  return /^\s*insert\s+into\s+(?:"?\w+"?\.)?"?(\w+)"?/i.exec(text)?.[1];
}

/** The pattern of each table's name as a whole word, made once (tables are few). */
const namePatterns = new Map<string, RegExp>();

/** Whether `text` names `table`, quoted or not (a column of that name counts too: then nothing rides). */
function names(text: string, table: string): boolean {
  let pattern = namePatterns.get(table);
  if (!pattern) {
    pattern = new RegExp(`(?<!\\w)${table}(?!\\w)`, 'i');
    namePatterns.set(table, pattern);
  }
  return pattern.test(text);
}

/** The statement's own `$n` placeholders moved up by `offset` (kysely numbers them from $1, in order). */
function renumbered(text: string, offset: number): string {
  if (offset === 0) return text;
  return text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}

/**
 * Whether `main` can carry `writes`: a plain statement that names none of their tables. (Its `with`
 * clauses, if any, then follow the writes'; a `with recursive` is left alone.)
 */
export function canCarry(main: string, writes: readonly Statement[]): boolean {
  if (!/^\s*(select|insert|update|delete|with(?!\s+recursive))\s/i.test(main)) return false;
  return writes.every((write) => {
    const table = tableOf(write.text);
    return table !== undefined && !names(main, table);
  });
}

/**
 * One statement running `writes` (in their order) and then `main`, with every placeholder renumbered.
 * `main` must carry them (canCarry); its result is the statement's result.
 */
export function combine(writes: readonly Statement[], main: Statement): Statement {
  const clauses: string[] = [];
  const values: unknown[] = [];
  writes.forEach((write, index) => {
    clauses.push(`w${index} as (${renumbered(write.text, values.length)})`);
    values.push(...write.values);
  });
  const body = renumbered(main.text.trim(), values.length);
  values.push(...main.values);
  const ownWith = /^with\s/i.exec(body);
  const text = ownWith
    ? `with ${clauses.join(', ')}, ${body.slice(ownWith[0].length)}`
    : `with ${clauses.join(', ')} ${body}`;
  return { text, values };
}

/**
 * What a statement does to its connection's transaction, from its first words. A `rollback to` a
 * savepoint is no boundary but an ordinary statement: the writes held before it go out first, it
 * undoes theirs that follow the savepoint, and once it succeeds the transaction may go on.
 */
function boundaryOf(text: string): 'begin' | 'commit' | 'rollback' | 'rollback to' | undefined {
  const words = /^\s*(begin|start\s+transaction|commit|rollback(?:\s+to\b)?)\b/i.exec(text)?.[1];
  if (words === undefined) return undefined;
  const kind = words.toLowerCase().replace(/\s+/g, ' ');
  return kind === 'commit' || kind === 'rollback' || kind === 'rollback to' ? kind : 'begin';
}

/** The writes sent as one statement: the last one carries the others. */
function asOne(writes: readonly Statement[]): Statement {
  const last = writes[writes.length - 1] as Statement;
  return writes.length === 1 ? last : combine(writes.slice(0, -1), last);
}

/**
 * What one connection holds back, and its transaction as this process sent it. `route` is called for
 * every statement the connection is given, in order, and decides what is sent, as units
 * (`StatementUnit`: statements that go out together and cost one round trip).
 *
 * A transaction's `begin` is held too, and goes out with the transaction's first statement; its
 * `commit` goes out with the writes still held, if any. A transaction of deferred writes alone is one
 * unit (`begin`, the writes, `commit`); one that sent nothing sends nothing.
 *
 * A commit after a statement of the same transaction failed is refused here, not sent: PostgreSQL
 * would answer it ROLLBACK, as if it had committed, and an error caught and ignored inside the
 * transaction (or a deferred write's, which surfaces on its carrier) must not be lost so.
 */
export class PendingWrites {
  private pending: Statement[] = [];
  /** The transaction's `begin`, until its first statement goes out. */
  private begin: string | undefined;
  /** Whether a transaction was begun and has not ended, as routed (the server may not know it yet). */
  private open = false;
  /** Whether a statement of the open transaction failed. */
  private failed = false;

  /** `units`: whether a `begin` or `commit` may go out with another statement (else each goes alone). */
  constructor(private readonly units = true) {}

  get size(): number {
    return this.pending.length;
  }

  /** Whether a transaction was begun on this connection and not yet ended. */
  get inTransaction(): boolean {
    return this.open;
  }

  /** Forgets what waits (a connection handed back: its transaction has ended, committed or not). */
  clear(): void {
    this.pending = [];
    this.begin = undefined;
    this.open = false;
    this.failed = false;
  }

  /** The held `begin`, handed over to be sent now (before a statement that cannot go in a unit). */
  takeBegin(): string | undefined {
    const begin = this.begin;
    this.begin = undefined;
    return begin;
  }

  /**
   * Sends `statement` through `send` with what waits before it, or holds it (a `begin`; a deferrable
   * write inside a transaction), answering `empty` at once.
   */
  route<R>(statement: Statement, send: (unit: StatementUnit) => Promise<R>, empty: R): Promise<R> {
    const boundary = boundaryOf(statement.text);
    if (boundary === 'begin' && !this.open) {
      this.open = true;
      this.failed = false;
      if (!this.units) return this.watch(send(unit(undefined, statement)));
      this.begin = statement.text;
      return Promise.resolve(empty);
    }
    if (boundary === 'commit' || boundary === 'rollback') return this.end(boundary, statement, send, empty);
    if (this.open && isDeferrable(statement.text)) {
      this.pending.push(statement);
      return Promise.resolve(empty);
    }
    const before = this.takeBegin();
    const writes = this.pending;
    this.pending = [];
    const recovers = boundary === 'rollback to';
    if (writes.length === 0) return this.watch(send(unit(before, statement)), recovers);
    if (canCarry(statement.text, writes)) return this.watch(send(unit(before, combine(writes, statement))));
    // Sent back to back (the connection runs them in this order): the writes first, as one.
    return afterOther(
      this.watch(send(unit(before, asOne(writes)))),
      this.watch(send(unit(undefined, statement)), recovers),
    );
  }

  private end<R>(
    boundary: 'commit' | 'rollback',
    statement: Statement,
    send: (unit: StatementUnit) => Promise<R>,
    empty: R,
  ): Promise<R> {
    const before = this.takeBegin();
    const writes = this.pending;
    const failed = this.failed;
    this.clear();
    if (boundary === 'commit' && failed) {
      return Promise.reject(new Error('The transaction failed on an earlier statement: not committed.'));
    }
    // A rollback drops the writes; a transaction that sent nothing has nothing to end.
    if (boundary === 'rollback' || writes.length === 0) {
      return before === undefined ? send(unit(undefined, statement)) : Promise.resolve(empty);
    }
    if (this.units) return send({ ...unit(before, asOne(writes)), after: statement.text });
    // Back to back: the writes, then the commit.
    return afterOther(send(unit(undefined, asOne(writes))), send(unit(undefined, statement)));
  }

  /**
   * Marks the open transaction failed when `answer` fails, and sound again when it `recovers` (a
   * `rollback to` a savepoint that succeeded: PostgreSQL then lets the transaction go on).
   */
  private watch<R>(answer: Promise<R>, recovers = false): Promise<R> {
    if (this.open) {
      answer.then(
        () => {
          if (recovers) this.failed = false;
        },
        () => {
          this.failed = true;
        },
      );
    }
    return answer;
  }
}

/** The answer of the second of two statements sent back to back, or the first one's error. */
function afterOther<R>(first: Promise<R>, second: Promise<R>): Promise<R> {
  return first.then(
    () => second,
    (error: unknown) => {
      second.catch(() => undefined);
      throw error;
    },
  );
}

function unit(before: string | undefined, main: Statement): StatementUnit {
  return before === undefined ? { main } : { before, main };
}
