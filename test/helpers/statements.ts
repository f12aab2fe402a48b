import SQLite from 'better-sqlite3';
import pg from 'pg';

/** One statement the database driver ran: its SQL and how many parameters it took. */
export interface Statement {
  sql: string;
  parameters: number;
}

/**
 * Records every statement this process sends to SQLite (better-sqlite3's statement methods) and to
 * PostgreSQL (pg's Client.query) until `stop` is called.
 */
export function recordStatements(): { statements: Statement[]; stop(): void } {
  const statements: Statement[] = [];
  const restore: Array<() => void> = [];
  const probe = new SQLite(':memory:');
  const sqlitePrototype = Object.getPrototypeOf(probe.prepare('select 1')) as Record<
    string,
    (this: { source: string }, ...args: unknown[]) => unknown
  >;
  probe.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = sqlitePrototype[method];
    if (!original) continue;
    sqlitePrototype[method] = function (this: { source: string }, ...args: unknown[]) {
      statements.push({
        sql: this.source,
        parameters: Array.isArray(args[0]) ? args[0].length : args.length,
      });
      return original.apply(this, args);
    };
    restore.push(() => (sqlitePrototype[method] = original));
  }
  const pgPrototype = pg.Client.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const query = pgPrototype.query;
  if (query) {
    pgPrototype.query = function (this: unknown, ...args: unknown[]) {
      const [config, values] = args;
      const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
      const params =
        (Array.isArray(values) ? values : (config as { values?: unknown[] } | undefined)?.values) ?? [];
      if (text) statements.push({ sql: text, parameters: params.length });
      return query.apply(this, args);
    };
    restore.push(() => (pgPrototype.query = query));
  }
  return { statements, stop: () => restore.forEach((undo) => undo()) };
}
