import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teams } from '../src/db/migrations/0028_teams.js';
import { DATABASES } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

/**
 * 0028 keeps the people of existing accounts working: the owner stays owner, people invited before
 * (who could do everything but manage users) become admin, those who never signed in are `invited`,
 * and keys that agents got from a person's approval record that person.
 */
describe.each(DATABASES)('migration 0028_teams on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('maps roles and statuses and records the person behind agent keys', async () => {
    const db = opened.db.kysely;
    await teams.down?.(db);
    const at = '2026-01-01T00:00:00.000Z';
    await sql`insert into accounts (id, name, email, plan, default_language, rate_limit_per_hour, created_at)
      values ('acct_before0028xxxxxxxxxxxx', 'Old', 'owner@example.com', 'solo', 'en', null, ${at})`.execute(
      db,
    );
    const person = (id: string, email: string, role: string, signedIn: string | null) =>
      sql`insert into account_users (id, account_id, email, role, invited_by_user_id, created_at, last_signed_in_at)
        values (${id}, 'acct_before0028xxxxxxxxxxxx', ${email}, ${role}, null, ${at}, ${signedIn})`.execute(
        db,
      );
    await person('usr_owner', 'owner@example.com', 'owner', null);
    await person('usr_active', 'active@example.com', 'member', at);
    await person('usr_never', 'never@example.com', 'member', null);
    const key = (id: string) =>
      sql`insert into api_keys (id, account_id, livemode, name, scopes, prefix, key_hash, created_by_key_id, created_at, last_used_at, revoked_at, expires_at)
        values (${id}, 'acct_before0028xxxxxxxxxxxx', 1, ${id}, '["admin"]', 'svc_live_x', ${`hash-${id}`}, null, ${at}, null, null, null)`.execute(
        db,
      );
    await key('key_device');
    await key('key_cli');
    await sql`insert into audit_entries (id, account_id, livemode, action, resource_type, resource_id, actor_type, actor_id, request_id, created_at)
      values ('aud_1', 'acct_before0028xxxxxxxxxxxx', 1, 'oauth.device_key_issued', 'api_key', 'key_device', 'user', 'usr_active', null, ${at})`.execute(
      db,
    );

    await teams.up(db);

    const people = await db
      .selectFrom('account_users')
      .select(['id', 'role', 'status'])
      .where('account_id', '=', 'acct_before0028xxxxxxxxxxxx')
      .orderBy('id')
      .execute();
    expect(people).toEqual([
      { id: 'usr_active', role: 'admin', status: 'active' },
      { id: 'usr_never', role: 'admin', status: 'invited' },
      { id: 'usr_owner', role: 'owner', status: 'active' },
    ]);
    const keys = await db
      .selectFrom('api_keys')
      .select(['id', 'created_by_user_id'])
      .where('account_id', '=', 'acct_before0028xxxxxxxxxxxx')
      .orderBy('id')
      .execute();
    expect(keys).toEqual([
      { id: 'key_cli', created_by_user_id: null },
      { id: 'key_device', created_by_user_id: 'usr_active' },
    ]);
  });
});
