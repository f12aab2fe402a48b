import type { MaybePromise } from '../lib/maybe-promise.js';
import type { Db } from './database.js';

/** A kept value, the change version it was read under and, for an account's value, that account's. */
interface Entry<V> {
  value: V;
  version: number;
  account: string | undefined;
  accountVersion: number | undefined;
}

/** Computes a value from the database; `undefined` (not found) is never kept. */
export type Load<V> = () => Promise<V | undefined>;

/** The account whose rows alone a value is read from: known before the read, or named by the value. */
export type AccountOf<V> = string | ((value: V) => string);

/**
 * A memo of values computed from the database, kept until the next commit to the database by any
 * connection of any process (`Db.changeVersion`), so a change is seen by the next request wherever it
 * was made. Where the database offers no change version (PostgreSQL), every call computes, but for a
 * memo that checks each read against its account's version (`checkEachRead`, below).
 * A kept value is answered synchronously (no promise): these reads sit on every request's path.
 *
 * A value read from one account's rows alone may name that account: it then outlives commits that
 * change nothing the account's answers read (`Db.answerVersion`), such as another account's writes or
 * this account's jobs. After a commit it costs one read of the account's version, not the load. The
 * version is read before the rows, or in the same snapshot (`Db.readSnapshot`) when the account is
 * known only from the value (an API key's): never after them, or a commit between the two would leave
 * the old rows kept under the new version.
 *
 * Only found values are kept, so guessing ids cannot fill the memory; the map is bounded anyway.
 * A value may be kept only if it is a function of the database's rows alone (no clock, no caller).
 */
export interface BetweenCommits<V> {
  /**
   * The kept value, else `load()`'s (kept if found and nothing was committed meanwhile). `account`:
   * the one account whose rows `load` reads, if it reads no other, or how the value found names it.
   * `known`: that account's version, if the caller read it before anything `load` reads (for
   * `checkEachRead`, which then reads none).
   */
  (db: Db, key: string, load: Load<V>, account?: AccountOf<V>, known?: number): MaybePromise<V | undefined>;
  /** The kept value, if there is one and it is still current; computes nothing. */
  peek(db: Db, key: string): V | undefined;
}

/** How much a memo may hold: entries, and their summed weight (`weigh`: bytes, say). */
export interface MemoBounds<V> {
  maxEntries?: number;
  weigh?: (value: V) => number;
  maxWeight?: number;
  /**
   * Where the database has no change version but can read an account's (PostgreSQL,
   * `Db.readAnswerVersion`): keep values named by their account (known before the read) and check
   * each against that version, one statement, before answering it. Worth it where a load runs several
   * statements; a load of one statement would only trade it for another.
   */
  checkEachRead?: boolean;
}

export function betweenCommits<V>({
  maxEntries = 10_000,
  weigh,
  maxWeight = Infinity,
  checkEachRead = false,
}: MemoBounds<V> = {}): BetweenCommits<V> {
  const perDb = new WeakMap<Db, { map: Map<string, Entry<V>>; weight: number }>();

  /** Keeps an entry; a full memo is emptied first (the values kept longest are mostly stale by then). */
  const keep = (db: Db, key: string, entry: Entry<V>): void => {
    let entries = perDb.get(db);
    const weight = weigh?.(entry.value) ?? 0;
    if (!entries || entries.map.size >= maxEntries || entries.weight + weight > maxWeight) {
      entries = { map: new Map(), weight: 0 };
      perDb.set(db, entries);
    }
    const replaced = entries.map.get(key);
    entries.map.set(key, entry);
    entries.weight += weight - (replaced ? (weigh?.(replaced.value) ?? 0) : 0);
  };

  async function loadAndKeep(db: Db, key: string, load: Load<V>, version: number, account?: AccountOf<V>) {
    // Read before the rows (in the same snapshot, or an older one): a commit after it moves it.
    const known = typeof account === 'string' ? account : undefined;
    let accountVersion = known === undefined ? undefined : db.answerVersion?.(known);
    const snapshot = typeof account === 'function' ? db.readSnapshot?.() : undefined;
    const value = await load();
    // Kept only if nothing was committed meanwhile: otherwise the rows read may predate that commit.
    if (value === undefined || db.changeVersion?.() !== version) return value;
    let named = known;
    if (typeof account === 'function' && snapshot !== undefined) {
      named = account(value);
      const read = db.answerVersion?.(named);
      // Only if the rows came from the snapshot the version was read in (no transaction between).
      if (db.readSnapshot?.() === snapshot) accountVersion = read;
    }
    keep(db, key, { value, version, account: named, accountVersion });
    return value;
  }

  const forget = (db: Db, key: string): void => {
    const entries = perDb.get(db);
    const entry = entries?.map.get(key);
    if (entries === undefined || entry === undefined) return;
    entries.map.delete(key);
    entries.weight -= weigh?.(entry.value) ?? 0;
  };

  const peek = (db: Db, key: string): V | undefined => {
    const version = db.changeVersion?.();
    const entries = perDb.get(db);
    const entry = entries?.map.get(key);
    if (version === undefined || entry === undefined) return undefined;
    if (entry.version === version) return entry.value;
    // Something was committed since: the account's value stands if none of its rows changed.
    if (entry.accountVersion !== undefined && entry.account !== undefined) {
      const accountVersion = db.answerVersion?.(entry.account);
      if (accountVersion === entry.accountVersion) {
        entry.version = version;
        return entry.value;
      }
      // Not to be read now (a transaction holds the connection): computed afresh, kept for later.
      if (accountVersion === undefined) return undefined;
    }
    forget(db, key);
    return undefined;
  };

  /** Without a change version: the account's version read first, then the kept value or the rows. */
  async function checkedRead(
    db: Db,
    key: string,
    load: Load<V>,
    account: string,
    known: number | undefined,
  ): Promise<V | undefined> {
    // Read before the rows: a commit after it leaves the value kept under an older version, never a
    // newer one, so it is read again next time.
    const accountVersion = known ?? (await db.readAnswerVersion?.(account));
    if (accountVersion === undefined) return load();
    const entry = perDb.get(db)?.map.get(key);
    if (entry?.account === account && entry.accountVersion === accountVersion) return entry.value;
    const value = await load();
    if (value === undefined) forget(db, key);
    else keep(db, key, { value, version: 0, account, accountVersion });
    return value;
  }

  const get = (
    db: Db,
    key: string,
    load: Load<V>,
    account?: AccountOf<V>,
    known?: number,
  ): MaybePromise<V | undefined> => {
    const version = db.changeVersion?.();
    if (version === undefined) {
      const checked = checkEachRead && typeof account === 'string' && db.readAnswerVersion !== undefined;
      return checked ? checkedRead(db, key, load, account, known) : load();
    }
    return peek(db, key) ?? loadAndKeep(db, key, load, version, account);
  };

  return Object.assign(get, { peek });
}

/**
 * Memoises a read of rows that change rarely but are read on every request (an API key with its account,
 * an account's portal branding) between commits (see betweenCommits). `accountOf`: the one account whose
 * rows a read reads, named by its key (a string) or by the value found.
 */
export function cachedReader<V>(
  load: (db: Db, key: string) => Promise<V | undefined>,
  accountOf?: { ofKey: (key: string) => string } | { ofValue: (value: V) => string },
): (db: Db, key: string) => MaybePromise<V | undefined> {
  const memo = betweenCommits<V>();
  if (accountOf === undefined) return (db, key) => memo(db, key, () => load(db, key));
  if ('ofKey' in accountOf) return (db, key) => memo(db, key, () => load(db, key), accountOf.ofKey(key));
  return (db, key) => memo(db, key, () => load(db, key), accountOf.ofValue);
}
