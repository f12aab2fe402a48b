import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { checkpointInBackground, INLINE_CHECKPOINT_PAGES } from '../src/db/sqlite-checkpoints.js';
import { eventually, sleep } from './helpers/receivers.js';

describe('SQLite checkpoints on a thread of their own', () => {
  let dataDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'checkpoints-'));
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('copies committed pages into the database file while no commit on the connection checkpoints', async () => {
    const db = openDatabase({ databaseUrl: undefined, dataDir });
    const file = join(dataDir, 'intake.sqlite');
    try {
      const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(
        db.kysely,
      );
      expect(rows).toEqual([{ wal_autocheckpoint: INLINE_CHECKPOINT_PAGES }]);

      await sql`create table checkpoint_probe (id integer primary key, body text not null)`.execute(
        db.kysely,
      );
      // 2,000 commits of a row each: about 2 MB of pages, more than SQLite's own 1,000 pages, fewer than ours.
      for (let id = 1; id <= 2_000; id++) {
        await sql`insert into checkpoint_probe (id, body) values (${id}, ${'x'.repeat(1_000)})`.execute(
          db.kysely,
        );
      }
      // Only a checkpoint writes pages into the database file: the connection's commits did not, the thread has.
      const size = await eventually(() => {
        const bytes = statSync(file).size;
        return Promise.resolve(bytes > 2_000_000 ? bytes : undefined);
      }, 'the database file to hold the committed rows');
      expect(size).toBeGreaterThan(2_000_000);
    } finally {
      await db.close();
    }
    // Closed cleanly: the thread's connection first, so that the last one to close folds the log in.
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('lets a process whose last work is closing the database end normally', async () => {
    // The thread is unref'd while it runs; closing must still wait for it, in a process that has
    // nothing else to keep it alive (a script, a CLI command), not end with the close unsettled.
    const script = join(dataDir, 'close-last.mts');
    const database = pathToFileURL(resolve('src/db/database.ts')).href;
    await writeFile(
      script,
      [
        `import { openDatabase } from ${JSON.stringify(database)};`,
        `const db = openDatabase({ databaseUrl: undefined, dataDir: ${JSON.stringify(dataDir)} });`,
        `await db.kysely.schema.createTable('t').addColumn('a', 'text').execute();`,
        'await new Promise((resolve) => setTimeout(resolve, 300));',
        'await db.close();',
        `console.log('closed');`,
      ].join('\n'),
    );
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', script], {
      cwd: resolve('.'),
      timeout: 30_000,
    });
    expect(stdout.trim()).toBe('closed');
  });

  it('starts checkpointing only once the database has changed', async () => {
    // A connection of the test's own that never checkpoints: only the thread can move its pages.
    const file = join(dataDir, 'gate.sqlite');
    const writer = new SQLite(file);
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec('create table probe (id integer primary key, body text not null)');
    const insert = writer.prepare('insert into probe (id, body) values (?, ?)');
    for (let id = 1; id <= 500; id++) insert.run(id, 'x'.repeat(1_000));
    const sizeAtFirst = statSync(file).size;
    let changed = false;
    const checkpoints = checkpointInBackground(
      file,
      () => changed,
      () => undefined,
      20,
    );
    try {
      await sleep(200); // ten intervals, told nothing has changed: no thread, no checkpoint
      expect(statSync(file).size).toBe(sizeAtFirst);
      changed = true;
      await eventually(
        () => Promise.resolve(statSync(file).size > 500_000 ? true : undefined),
        'the database file to hold the rows once told of the change',
      );
    } finally {
      await checkpoints.stop();
      writer.close();
    }
  });

  it('tells the opener what went wrong, once, and still stops', async () => {
    const file = join(dataDir, 'not-a-database');
    await writeFile(file, 'plain text, not a database '.repeat(200));
    const warnings: string[] = [];
    const checkpoints = checkpointInBackground(
      file,
      () => true,
      (message) => warnings.push(message),
      10,
    );
    try {
      await eventually(() => Promise.resolve(warnings.length > 0 ? true : undefined), 'a warning');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(warnings).toEqual(['checkpointing the SQLite log: file is not a database']);
    } finally {
      await checkpoints.stop();
    }
  });
});
