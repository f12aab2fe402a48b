import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teams } from '../src/db/migrations/0028_teams.js';
import { memberships } from '../src/db/migrations/0029_memberships.js';
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

/**
 * 0029 makes an address unique per account instead of across all accounts (SQLite rebuilds the table):
 * people, their sessions and sign-in links survive it, the links and sessions still go with their
 * person, and the same address may now join a second account but not twice the same one.
 */
describe.each(DATABASES)('migration 0029_memberships on %s', (database) => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;

  beforeAll(async () => {
    opened = await openTestDatabase(database);
  });
  afterAll(async () => {
    await opened?.close();
  });

  it('keeps people, sessions and links, and allows one address in several accounts', async () => {
    const db = opened.db.kysely;
    await memberships.down?.(db);
    const at = '2026-01-01T00:00:00.000Z';
    const later = '2099-01-01T00:00:00.000Z';
    for (const id of ['acct_before0029a', 'acct_before0029b']) {
      await sql`insert into accounts (id, name, email, plan, default_language, rate_limit_per_hour, created_at)
        values (${id}, ${id}, ${`${id}@example.com`}, 'agency', 'en', null, ${at})`.execute(db);
    }
    await sql`insert into account_users (id, account_id, email, role, invited_by_user_id, created_at, last_signed_in_at, name, status)
      values ('mem_kept', 'acct_before0029a', 'kept@example.com', 'owner', null, ${at}, ${at}, 'Kept', 'active'),
             ('mem_other', 'acct_before0029a', 'other@example.com', 'viewer', null, ${at}, null, null, 'invited')`.execute(
      db,
    );
    // Before: the same address in a second account is refused.
    await expect(
      sql`insert into account_users (id, account_id, email, role, invited_by_user_id, created_at, status)
        values ('mem_twice', 'acct_before0029b', 'kept@example.com', 'viewer', null, ${at}, 'invited')`.execute(
        db,
      ),
    ).rejects.toThrow();
    await sql`insert into user_sessions (id_hash, user_id, account_id, livemode, created_at, expires_at, last_seen_at)
      values ('session_kept', 'mem_kept', 'acct_before0029a', 1, ${at}, ${later}, ${at}),
             ('session_other', 'mem_other', 'acct_before0029a', 1, ${at}, ${later}, ${at})`.execute(db);
    await sql`insert into sign_in_tokens (token_hash, user_id, return_to, expires_at, used_at, created_at, purpose)
      values ('link_kept', 'mem_kept', null, ${later}, null, ${at}, 'sign_in')`.execute(db);

    await memberships.up(db);

    const people = await db
      .selectFrom('account_users')
      .select(['id', 'email', 'role', 'status', 'name', 'last_used_at'])
      .where('account_id', '=', 'acct_before0029a')
      .orderBy('id')
      .execute();
    expect(people).toEqual([
      {
        id: 'mem_kept',
        email: 'kept@example.com',
        role: 'owner',
        status: 'active',
        name: 'Kept',
        last_used_at: at,
      },
      {
        id: 'mem_other',
        email: 'other@example.com',
        role: 'viewer',
        status: 'invited',
        name: null,
        last_used_at: null,
      },
    ]);
    const sessions = await db.selectFrom('user_sessions').select('id_hash').orderBy('id_hash').execute();
    expect(sessions.map((s) => s.id_hash)).toEqual(expect.arrayContaining(['session_kept', 'session_other']));
    expect(
      await db.selectFrom('sign_in_tokens').select('user_id').where('token_hash', '=', 'link_kept').execute(),
    ).toEqual([{ user_id: 'mem_kept' }]);

    // After: a second account may have the address, the same account may not.
    const insert = (id: string, accountId: string) =>
      db
        .insertInto('account_users')
        .values({
          id,
          account_id: accountId,
          email: 'kept@example.com',
          role: 'viewer',
          invited_by_user_id: null,
          created_at: at,
          last_signed_in_at: null,
          name: null,
          status: 'invited',
          last_used_at: null,
        })
        .execute();
    await insert('mem_twice', 'acct_before0029b');
    await expect(insert('mem_thrice', 'acct_before0029a')).rejects.toThrow();

    // Sessions and links still go with their person (the foreign keys point at the rebuilt table).
    await db.deleteFrom('account_users').where('id', '=', 'mem_kept').execute();
    expect(
      await db.selectFrom('user_sessions').select('id_hash').where('user_id', '=', 'mem_kept').execute(),
    ).toEqual([]);
    expect(
      await db.selectFrom('sign_in_tokens').select('token_hash').where('user_id', '=', 'mem_kept').execute(),
    ).toEqual([]);
    // The remaining session still resolves to its person.
    expect(
      await db
        .selectFrom('user_sessions as s')
        .innerJoin('account_users as u', 'u.id', 's.user_id')
        .select('u.email')
        .where('s.id_hash', '=', 'session_other')
        .execute(),
    ).toEqual([{ email: 'other@example.com' }]);
  });
});
