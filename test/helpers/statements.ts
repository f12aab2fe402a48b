import SQLite from 'better-sqlite3';
import pg from 'pg';

/** One statement the database driver ran: its SQL and its parameters' values. */
export interface Statement {
  sql: string;
  values: readonly unknown[];
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
      const values: readonly unknown[] = Array.isArray(args[0]) ? args[0] : args;
      statements.push({ sql: this.source, values });
      return original.apply(this, args);
    };
    restore.push(() => (sqlitePrototype[method] = original));
  }
  restore.push(
    aroundPgQueries((text, values, send) => {
      if (text) statements.push({ sql: text, values });
      return send();
    }),
  );
  return { statements, stop: () => restore.forEach((undo) => undo()) };
}

/**
 * Puts `around` between pg's Client.query and every statement sent (its text and parameters, and
 * `send`, which sends it), until the function returned is called.
 */
export function aroundPgQueries(
  around: (text: string, values: readonly unknown[], send: () => unknown) => unknown,
): () => void {
  const prototype = pg.Client.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const query = prototype.query;
  if (!query) throw new Error('pg.Client has no query method');
  prototype.query = function (this: unknown, ...args: unknown[]) {
    const [config, second] = args;
    const text =
      typeof config === 'string' ? config : ((config as { text?: string } | undefined)?.text ?? '');
    const values =
      (Array.isArray(second) ? second : (config as { values?: unknown[] } | undefined)?.values) ?? [];
    return around(text, values, () => query.apply(this, args));
  };
  return () => (prototype.query = query);
}

/** Holds back the pg statements that `match` (text and parameters) until `release` is called. */
export function holdPgStatements(match: (text: string, values: readonly unknown[]) => boolean) {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  let held = 0;
  const restore = aroundPgQueries((text, values, send) => {
    if (!match(text, values)) return send();
    held++;
    return gate.then(send);
  });
  return { release, held: () => held, restore };
}
