/**
 * Counts the SQL statements this process runs on SQLite, by wrapping better-sqlite3's statement methods
 * (every Kysely query, prepared or not, and every BEGIN/COMMIT ends in one of them). For benchmarks only:
 * it says how many statements a request costs, by their first words.
 */
import SQLite from 'better-sqlite3';

type Method = 'run' | 'get' | 'all' | 'iterate';
const METHODS: readonly Method[] = ['run', 'get', 'all', 'iterate'];

export interface StatementCounter {
  /** Statements since the last reset, by kind ("insert into jobs", "select from intakes", "begin"…). */
  byKind(): Map<string, number>;
  total(): number;
  /** Wall time inside the statements since the last reset (SQLite's work and the rows' conversion), in ns. */
  nanoseconds(): number;
  /** The same by kind. */
  nanosecondsByKind(): Map<string, number>;
  reset(): void;
}

/** "insert into jobs", "select … from intakes", "update chase_plans", "begin", "pragma data_version". */
export function kindOf(source: string): string {
  const text = source.replace(/\s+/g, ' ').trim().toLowerCase();
  const verb = text.split(' ')[0] ?? '';
  const table = (pattern: RegExp) => pattern.exec(text)?.[1]?.replaceAll('"', '') ?? '?';
  if (verb === 'insert') return `insert into ${table(/^insert (?:or \w+ )?into ("?\w+"?)/)}`;
  if (verb === 'update') return `update ${table(/^update ("?\w+"?)/)}`;
  if (verb === 'delete') return `delete from ${table(/^delete from ("?\w+"?)/)}`;
  if (verb === 'select' || verb === 'with') return `select from ${table(/ from ("?\w+"?)/)}`;
  return text.split(' ').slice(0, 2).join(' ');
}

/** Starts counting; statements whose text matches `ignore` (the change-version probe) are left out. */
export function countStatements(ignore = /^pragma data_version/i): StatementCounter {
  const probe = new SQLite(':memory:');
  const prototype = Object.getPrototypeOf(probe.prepare('select 1')) as Record<
    Method,
    (...args: unknown[]) => unknown
  >;
  probe.close();
  const counts = new Map<string, number>();
  const spent = new Map<string, bigint>();
  for (const method of METHODS) {
    const original = prototype[method];
    prototype[method] = function (this: { source: string }, ...args: unknown[]) {
      if (ignore.test(this.source)) return original.apply(this, args);
      const kind = kindOf(this.source);
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        spent.set(kind, (spent.get(kind) ?? 0n) + process.hrtime.bigint() - started);
      }
    };
  }
  return {
    byKind: () => new Map(counts),
    total: () => [...counts.values()].reduce((sum, count) => sum + count, 0),
    nanoseconds: () => Number([...spent.values()].reduce((sum, ns) => sum + ns, 0n)),
    nanosecondsByKind: () => new Map([...spent].map(([kind, ns]) => [kind, Number(ns)])),
    reset: () => {
      counts.clear();
      spent.clear();
    },
  };
}
