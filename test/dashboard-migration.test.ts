import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboard } from '../src/db/migrations/0008_dashboard.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

/** 0008 gives every account that existed before it its first dashboard user: the account's email. */
describe.each(DATABASES)('migration 0008_dashboard on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('backfills the owner user of existing accounts, lower-cased', async () => {
    const db = opened.db.kysely;
    await dashboard.down?.(db);
    await db
      .insertInto('accounts')
      .values({
        id: 'acct_before0008xxxxxxxxxxxx',
        name: 'Old',
        email: 'Owner@Example.com',
        plan: 'free',
        default_language: 'en',
        rate_limit_per_hour: null,
        created_at: '2026-01-01T00:00:00.000Z',
      })
      .execute();
    await dashboard.up(db);
    const users = await db.selectFrom('account_users').selectAll().execute();
    expect(users).toEqual([
      expect.objectContaining({
        account_id: 'acct_before0008xxxxxxxxxxxx',
        email: 'owner@example.com',
        role: 'owner',
        created_at: '2026-01-01T00:00:00.000Z',
      }),
    ]);
    expect(users[0]?.id).toMatch(/^usr_[A-Za-z0-9]{22}$/);
  });
});
