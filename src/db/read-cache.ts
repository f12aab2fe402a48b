import type { Db } from './database.js';

interface Entries<V> {
  version: number;
  values: Map<string, V>;
}

/**
 * Memoises a read of rows that change rarely but are read on every request (an API key with its account,
 * an account's portal branding). Values are kept until the next commit to the database by any connection
 * of any process (`Db.changeVersion`), so a change is seen by the next request wherever it was made.
 * Where the database offers no change version (PostgreSQL), every call reads.
 *
 * Only found values are kept, so guessing ids cannot fill the memory; the map is bounded anyway.
 */
export function cachedReader<V>(
  load: (db: Db, key: string) => Promise<V | undefined>,
  maxEntries = 10_000,
): (db: Db, key: string) => Promise<V | undefined> {
  const perDb = new WeakMap<Db, Entries<V>>();

  return async (db, key) => {
    const changeVersion = db.changeVersion;
    if (!changeVersion) return load(db, key);

    const version = changeVersion();
    let entries = perDb.get(db);
    if (!entries || entries.version !== version) {
      entries = { version, values: new Map() };
      perDb.set(db, entries);
    }
    const cached = entries.values.get(key);
    if (cached !== undefined) return cached;

    const value = await load(db, key);
    // Kept only if nothing was committed meanwhile: otherwise the rows read may predate that commit.
    if (value !== undefined && changeVersion() === version && perDb.get(db) === entries) {
      if (entries.values.size >= maxEntries) entries.values.clear();
      entries.values.set(key, value);
    }
    return value;
  };
}
