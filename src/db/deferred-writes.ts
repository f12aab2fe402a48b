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
 * The writes of one connection waiting for their carrier. `route` is called for every statement the
 * connection is given, in order, and decides what is sent.
 */
export class PendingWrites {
  private pending: Statement[] = [];

  get size(): number {
    return this.pending.length;
  }

  /** Forgets what waits (a connection handed back: its transaction has ended, committed or not). */
  clear(): void {
    this.pending = [];
  }

  /**
   * Sends `statement` through `send`, with the writes waiting before it, or keeps it when it is a
   * deferrable write inside a transaction (then it answers an empty result at once).
   */
  route<R>(
    statement: Statement,
    inTransaction: boolean,
    send: (statement: Statement) => Promise<R>,
    empty: R,
  ): Promise<R> {
    if (inTransaction && isDeferrable(statement.text)) {
      this.pending.push(statement);
      return Promise.resolve(empty);
    }
    if (this.pending.length === 0) return send(statement);
    const writes = this.pending;
    this.pending = [];
    if (/^\s*rollback\b/i.test(statement.text)) return send(statement);
    if (canCarry(statement.text, writes)) return send(combine(writes, statement));
    // Sent back to back (the connection runs them in this order): the writes first, as one.
    const last = writes[writes.length - 1] as Statement;
    const flushed = send(writes.length === 1 ? last : combine(writes.slice(0, -1), last));
    const answer = send(statement);
    return flushed.then(
      () => answer,
      (error: unknown) => {
        answer.catch(() => undefined);
        throw error;
      },
    );
  }
}
