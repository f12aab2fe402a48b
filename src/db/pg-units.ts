import type PgModule from 'pg';
import type { StatementUnit } from './deferred-writes.js';

/**
 * Several statements sent to PostgreSQL as one unit: one write to the socket, one `Sync` at its end,
 * so one round trip. pg sends each query with a `Sync` of its own and waits for the server's answer to
 * it (`ReadyForQuery`) before it sends the next; a transaction's `begin` therefore costs a round trip
 * of its own before its first statement can go out, and its `commit` another after its last.
 *
 * In the extended protocol, messages up to a `Sync` are one unit for the server: it runs them in order
 * and, once one fails, skips the rest up to the `Sync` (a `begin` that failed leaves the statements
 * after it unrun; a statement that failed leaves the `commit` after it unrun, and the transaction
 * failed). The statements around the unit's own (`before`, `after`) take no parameters: a `begin`, a
 * `commit`. The answer is the unit's own statement's result (`StatementUnit`, deferred-writes.ts).
 */

/** What of pg's connection a unit writes to (pg's own `Connection`, undocumented). */
interface WireConnection {
  parse(query: { text: string; name?: string }): void;
  bind(config: { statement?: string; portal?: string; values?: unknown[] }): void;
  execute(config: { portal?: string; rows?: number }): void;
  sync(): void;
  submittedNamedStatements: Record<string, string>;
}

/** What of pg's `Query` a unit builds on: its constructor, its writing and its bookkeeping (pg 8). */
interface QueryInternals {
  text: string;
  name?: string;
  portal: string;
  callback?: (error: Error | null, result?: unknown) => void;
  hasBeenParsed(connection: WireConnection): boolean;
  prepare(connection: WireConnection): void;
  _getRows(connection: WireConnection, rows: number | undefined): void;
}
type QueryClass = new (config: {
  text: string;
  values: unknown[];
  name?: string;
  queryMode: 'extended';
}) => QueryInternals;

/** A statement without parameters, unnamed: parsed, bound and run, with no `Sync` after it. */
function writeBare(connection: WireConnection, text: string): void {
  connection.parse({ text });
  connection.bind({});
  connection.execute({});
}

/** Sends units on pg's clients, with pg's own `Query` doing the unit's own statement (and its values). */
export type UnitSender = <R>(client: PgModule.PoolClient, unit: StatementUnit) => Promise<R>;

/**
 * Whether pg's `Query` still has the steps a unit builds on (they are pg's own, not its documented
 * interface): without them a unit would send its statement without what goes around it.
 */
export function unitsSupported(pg: Pick<typeof PgModule, 'Query'>): boolean {
  const steps = pg.Query.prototype as unknown as Partial<Record<keyof QueryInternals, unknown>>;
  return (
    typeof steps.prepare === 'function' &&
    typeof steps._getRows === 'function' &&
    typeof steps.hasBeenParsed === 'function'
  );
}

/** A sender of units on `pg`'s clients; undefined when pg's `Query` cannot carry them (unitsSupported). */
export function unitSender(pg: Pick<typeof PgModule, 'Query'>): UnitSender | undefined {
  if (!unitsSupported(pg)) return undefined;
  const Query = pg.Query as unknown as QueryClass;

  class UnitQuery extends Query {
    /** The unit's statements in the order they run, as " | "-joined text (for what inspects a query's text). */
    readonly statements: string;
    /** The answer's place among the unit's results: after the `before` statement's, if any. */
    readonly answerAt: number;

    constructor(private readonly unit: StatementUnit) {
      super({
        text: unit.main.text,
        values: unit.main.values,
        ...(unit.main.name === undefined ? {} : { name: unit.main.name }),
        // Even without parameters: a simple query would bring a `Sync` of its own.
        queryMode: 'extended',
      });
      this.statements = [unit.before, unit.main.text, unit.after].filter((t) => t !== undefined).join(' | ');
      this.answerAt = unit.before === undefined ? 0 : 1;
    }

    override prepare(connection: WireConnection): void {
      // A named statement parsed first: pg counts it parsed on the first parse the unit answers, so
      // that answer must be its own (the unnamed statements after it are parsed too).
      if (this.name !== undefined && !this.hasBeenParsed(connection)) {
        connection.parse({ text: this.text, name: this.name });
        connection.submittedNamedStatements[this.name] = this.text;
      }
      if (this.unit.before !== undefined) writeBare(connection, this.unit.before);
      super.prepare(connection);
    }

    /** pg's last step of a statement (run it, then `Sync`), with the `after` statement before the `Sync`. */
    override _getRows(connection: WireConnection, rows: number | undefined): void {
      connection.execute({ portal: this.portal, ...(rows === undefined ? {} : { rows }) });
      if (this.unit.after !== undefined) writeBare(connection, this.unit.after);
      connection.sync();
    }
  }

  return <R>(client: PgModule.PoolClient, unit: StatementUnit) =>
    new Promise<R>((resolve, reject) => {
      const query = new UnitQuery(unit);
      query.callback = (error, results) => {
        if (error) reject(error);
        // One result per statement that ran (an array once there are two).
        else resolve((Array.isArray(results) ? results[query.answerAt] : results) as R);
      };
      client.query(query as unknown as PgModule.Submittable);
    });
}
