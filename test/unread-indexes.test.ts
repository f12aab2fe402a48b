/**
 * Migration 0051 drops two indexes nothing reads any more (an item's status with its account, an
 * account's events in time order), and its way down builds them again.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropUnreadIndexes } from '../src/db/migrations/0051_drop_unread_indexes.js';
import { DATABASES } from './helpers/env.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const DROPPED = ['events_account', 'intake_items_awaiting_review'];

describe.each(DATABASES)('indexes nothing reads, on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(database);
  });
  afterAll(async () => {
    await server.stop();
  });

  const db = () => server.server.services.db.kysely;

  /** Which of the dropped indexes the schema holds. */
  async function present(): Promise<string[]> {
    const { rows } =
      database === 'sqlite'
        ? await sql<{ name: string }>`select name from sqlite_master where type = 'index'`.execute(db())
        : await sql<{ name: string }>`select indexname as name from pg_indexes
            where schemaname = current_schema()`.execute(db());
    return rows
      .map((row) => row.name)
      .filter((name) => DROPPED.includes(name))
      .sort();
  }

  it('are gone once migrated, back on the way down, and gone again on the way up', async () => {
    expect(await present()).toEqual([]);
    if (!dropUnreadIndexes.down) throw new Error('no way down');
    await dropUnreadIndexes.down(db());
    try {
      expect(await present()).toEqual(DROPPED);
    } finally {
      await dropUnreadIndexes.up(db());
    }
    expect(await present()).toEqual([]);
  });
});
