import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the checkpointing thread looks for commits to copy into the database file. */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * The log's length, in pages, at which a commit checkpoints anyway (SQLite's `wal_autocheckpoint`; its
 * default is 1,000). The log starts over only at a write that finds every page of it copied: under
 * writes without a pause the thread's passes never catch up, and this bounds the log (about 40 MB of
 * 4 KB pages). That commit copies only what the thread has not, and the next one starts the log over.
 */
export const INLINE_CHECKPOINT_PAGES = 10_000;

/**
 * The thread's code, plain JavaScript (no loader to start): its own connection, and on every tick on
 * which another connection has committed (`data_version` moved), a passive checkpoint. A passive
 * checkpoint takes no lock a writer waits for: it copies what no reader still needs and leaves the
 * rest for the next tick. After ten ticks without a commit it ticks ten times less often, until the
 * next commit: an idle process's thread wakes once a second. An error is posted to the opener, once
 * per distinct message.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
let connection;
const open = () => {
  const db = new SQLite(workerData.file);
  try {
    db.pragma('synchronous = NORMAL');
    const version = db.prepare('PRAGMA data_version').pluck();
    return { db, version, checkpoint: db.prepare('PRAGMA wal_checkpoint(PASSIVE)'), seen: undefined };
  } catch (error) {
    db.close();
    throw error;
  }
};
let lastError = '';
let quietTicks = 0;
const tick = () => {
  try {
    connection ??= open();
    const now = connection.version.get();
    if (now === connection.seen) {
      quietTicks++;
      return;
    }
    quietTicks = 0;
    connection.seen = now;
    connection.checkpoint.get();
  } catch (error) {
    const message = String(error && error.message);
    if (message !== lastError) parentPort.postMessage({ error: message });
    lastError = message;
  }
};
let timer;
const next = () => {
  timer = setTimeout(() => {
    tick();
    next();
  }, quietTicks < 10 ? workerData.intervalMs : workerData.intervalMs * 10);
};
next();
parentPort.on('message', () => {
  clearTimeout(timer);
  connection?.db.close();
  parentPort.close();
});
`;

export interface Checkpoints {
  /** Ends the thread, its connection closed (the last connection to close checkpoints what is left). */
  stop(): Promise<void>;
}

/**
 * Copies the write-ahead log into the database file on a thread of its own, so that commits do not.
 * SQLite's own checkpoint runs inside the commit that takes the log past 1,000 pages, on the event
 * loop, which waits while it copies the pages and syncs both files; moved here, intake creation went
 * 40–85% faster on SQLite (bench/README.md). The opener raises that threshold (INLINE_CHECKPOINT_PAGES)
 * and calls this.
 *
 * The thread starts once the database has changed (`changed`, asked every interval): a process that
 * only reads, as most CLI commands, starts none. Until then the log grows for one interval at most.
 */
export function checkpointInBackground(
  file: string,
  changed: () => boolean,
  warn: (message: string) => void,
  intervalMs = CHECKPOINT_INTERVAL_MS,
): Checkpoints {
  let thread: Worker | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  const waiting = setInterval(() => {
    if (!changed()) return;
    clearInterval(waiting);
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    thread = new Worker(THREAD_CODE, { eval: true, workerData: { file, driver, intervalMs } });
    thread.unref();
    const started = thread;
    exited = new Promise((resolve) => started.once('exit', resolve));
    thread.on('message', (message: { error: string }) =>
      warn(`checkpointing the SQLite log: ${message.error}`),
    );
    thread.on('error', (error) => warn(`the SQLite checkpoint thread stopped: ${String(error)}`));
  }, intervalMs);
  waiting.unref();
  return {
    stop: async () => {
      clearInterval(waiting);
      // Held by the thread until it has closed: unref'd, a process with nothing else left to do would
      // end before its exit came, with this promise unsettled.
      thread?.ref();
      thread?.postMessage('stop');
      await exited;
    },
  };
}
