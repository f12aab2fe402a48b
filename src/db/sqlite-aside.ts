import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The thread's code, plain JavaScript (no loader to start): a read-only connection of its own, opened at
 * the first read, which runs each statement it is sent (prepared once per SQL text) and posts back its
 * rows or its error. Statements run one at a time, in the order sent; each is a transaction of its own,
 * so it sees every commit made before it began.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
let db;
const statements = new Map();
parentPort.on('message', (message) => {
  if (message === 'stop') {
    db?.close();
    parentPort.close();
    return;
  }
  try {
    db ??= new SQLite(workerData.file, { readonly: true, fileMustExist: true });
    let statement = statements.get(message.sql);
    if (!statement) {
      statement = db.prepare(message.sql);
      if (statements.size >= 100) statements.clear();
      statements.set(message.sql, statement);
    }
    parentPort.postMessage({ id: message.id, rows: statement.all(message.parameters) });
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: String(error && error.message) });
  }
});
`;

type Row = Record<string, unknown>;
type Answer = { id: number; rows: Row[] } | { id: number; error: string };

export interface ReadsAside {
  /** The rows of a read-only statement, run on the thread. */
  read(sqlText: string, parameters: readonly unknown[]): Promise<Row[]>;
  /** Ends the thread once the reads sent have been answered, its connection closed. */
  stop(): Promise<void>;
}

/**
 * Reads that scan a large part of a table (the job table summed up for a metrics scrape: 0.5–0.7 s at
 * a million jobs) run on a thread of their own with a read-only connection of its own, so that the
 * event loop answers requests meanwhile. Everything else reads on the main connection, where a small
 * indexed read costs less than a message to another thread.
 *
 * The thread starts at the first read and is held only while reads are waiting: an idle process is not
 * kept alive by it. A failed statement rejects its read; the thread goes on.
 */
export function readsAside(file: string): ReadsAside {
  let thread: Worker | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  let nextId = 0;
  const waiting = new Map<number, { resolve: (rows: Row[]) => void; reject: (error: Error) => void }>();

  const start = (): Worker => {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const started = new Worker(THREAD_CODE, { eval: true, workerData: { file, driver } });
    exited = new Promise((resolve) => started.once('exit', resolve));
    started.on('message', (answer: Answer) => {
      const read = waiting.get(answer.id);
      waiting.delete(answer.id);
      if (waiting.size === 0) started.unref();
      if ('error' in answer) read?.reject(new Error(answer.error));
      else read?.resolve(answer.rows);
    });
    // The thread itself failed (not a statement): every read waiting on it fails, the next starts another.
    started.on('error', (error) => {
      thread = undefined;
      for (const read of waiting.values()) read.reject(error);
      waiting.clear();
    });
    return started;
  };

  return {
    read(sqlText, parameters) {
      thread ??= start();
      thread.ref();
      const id = nextId++;
      return new Promise<Row[]>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        thread?.postMessage({ id, sql: sqlText, parameters });
      });
    },
    async stop() {
      if (!thread) return;
      thread.ref();
      thread.postMessage('stop');
      thread = undefined;
      await exited;
    },
  };
}
