import type { MaybePromise } from '../lib/maybe-promise.js';
import type { Db } from './database.js';

interface Entries<V> {
  version: number;
  values: Map<string, V>;
}

/** Computes a value from the database; `undefined` (not found) is never kept. */
export type Load<V> = () => Promise<V | undefined>;

/**
 * A memo of values computed from the database, kept until the next commit to the database by any
 * connection of any process (`Db.changeVersion`), so a change is seen by the next request wherever it
 * was made. Where the database offers no change version (PostgreSQL), every call computes.
 * A kept value is answered synchronously (no promise): these reads sit on every request's path.
 *
 * Only found values are kept, so guessing ids cannot fill the memory; the map is bounded anyway.
 * A value may be kept only if it is a function of the database's rows alone (no clock, no caller).
 */
export interface BetweenCommits<V> {
  /** The kept value, else `load()`'s (kept if found and nothing was committed meanwhile). */
  (db: Db, key: string, load: Load<V>): MaybePromise<V | undefined>;
  /** The kept value, if there is one; computes nothing. */
  peek(db: Db, key: string): V | undefined;
}

export function betweenCommits<V>(maxEntries = 10_000): BetweenCommits<V> {
  const perDb = new WeakMap<Db, Entries<V>>();

  async function loadAndKeep(db: Db, key: string, load: Load<V>, entries: Entries<V>, version: number) {
    const value = await load();
    // Kept only if nothing was committed meanwhile: otherwise the rows read may predate that commit.
    if (value !== undefined && db.changeVersion?.() === version && perDb.get(db) === entries) {
      if (entries.values.size >= maxEntries) entries.values.clear();
      entries.values.set(key, value);
    }
    return value;
  }

  const get = (db: Db, key: string, load: Load<V>): MaybePromise<V | undefined> => {
    const changeVersion = db.changeVersion;
    if (!changeVersion) return load();

    const version = changeVersion();
    let entries = perDb.get(db);
    if (!entries || entries.version !== version) {
      entries = { version, values: new Map() };
      perDb.set(db, entries);
    }
    return entries.values.get(key) ?? loadAndKeep(db, key, load, entries, version);
  };

  const peek = (db: Db, key: string): V | undefined => {
    const entries = perDb.get(db);
    return entries && entries.version === db.changeVersion?.() ? entries.values.get(key) : undefined;
  };

  return Object.assign(get, { peek });
}

/**
 * Memoises a read of rows that change rarely but are read on every request (an API key with its account,
 * an account's portal branding) between commits (see betweenCommits).
 */
export function cachedReader<V>(
  load: (db: Db, key: string) => Promise<V | undefined>,
  maxEntries = 10_000,
): (db: Db, key: string) => MaybePromise<V | undefined> {
  const memo = betweenCommits<V>(maxEntries);
  return (db, key) => memo(db, key, () => load(db, key));
}
