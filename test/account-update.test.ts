import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../src/lib/clock.js';
import { createAccount, updateAccount } from '../src/modules/accounts/accounts.service.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

describe.each(DATABASES)('updateAccount on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
  });
  afterAll(async () => {
    await opened.close();
  });

  it('stamps the branding with the clock it is given', async () => {
    const db = opened.db.kysely;
    const { account_id } = await createAccount(
      db,
      { email: 'studio@example.com', plan: 'agency' },
      new Date().toISOString(),
    );
    const account = await db
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', account_id)
      .executeTakeFirstOrThrow();
    const clock: Clock = { now: () => new Date('2031-05-06T07:08:09.000Z') };
    const auth = { account, keyId: 'key_test', scopes: ['admin'], livemode: true, clock };
    const updated = await updateAccount(db, clock, auth, {
      name: 'Nord Studio',
      default_language: undefined,
      branding: { accent_color: '#ABCDEF' },
    });
    expect(updated.name).toBe('Nord Studio');
    const branding = await db
      .selectFrom('account_branding')
      .select(['accent_color', 'updated_at'])
      .where('account_id', '=', account_id)
      .executeTakeFirstOrThrow();
    expect(branding).toEqual({ accent_color: '#abcdef', updated_at: '2031-05-06T07:08:09.000Z' });
  });
});
