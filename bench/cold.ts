/**
 * The cold path of a read, for the benchmarks that measure one: every read as if another commit had
 * come just before it, as on a server where writes arrive between every two requests.
 */
import { sql } from 'kysely';
import type { RunningServer } from '../src/server.js';

/**
 * Runs `run` with the database's change version swapped for a counter that moves on every call, so
 * nothing kept between commits helps (neither the key with its account nor a kept answer): every read
 * goes to SQLite and builds its answer. With `ofThisAccount` false, the commits change nothing of the
 * reading account (another account's writes, this one's jobs): the account's version stays as it is,
 * as the real one would, and what is kept per account may be answered (nothing can be kept anew while
 * the counter moves). The real versions are back when `run` settles.
 */
export async function withEveryReadAfterACommit<T>(
  service: RunningServer,
  run: () => Promise<T>,
  ofThisAccount = true,
): Promise<T> {
  const db = service.services.db;
  const realVersion = db.changeVersion;
  const realAnswerVersion = db.answerVersion;
  if (!realVersion) throw new Error('A cold pass needs SQLite (a database with a change version)');
  let version = realVersion();
  db.changeVersion = () => ++version;
  // The account's version is still read, as after a real commit of this account; it never matches.
  if (ofThisAccount) {
    db.answerVersion = (accountId) => {
      realAnswerVersion?.(accountId);
      return ++version;
    };
  }
  try {
    return await run();
  } finally {
    db.changeVersion = realVersion;
    db.answerVersion = realAnswerVersion;
  }
}

/**
 * A commit that changes a row of the account (its name, set to itself), untimed by the caller before
 * each read: the cold path on PostgreSQL, where kept answers are checked against the account's version
 * on every read (read-cache.ts) and a commit like this one moves it. SQLite's is the swap above, which
 * costs no statement.
 */
export async function commitToAccount(service: RunningServer, accountId: string): Promise<void> {
  await sql`update accounts set name = name where id = ${accountId}`.execute(service.services.db.kysely);
}
