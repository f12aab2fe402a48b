import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Teams: the account's people (account_users) get a name, a status (invited until their first
 * sign-in) and the four roles owner | admin | member | viewer. Existing people keep working: the
 * account's owner stays owner, and an invited user (who could do everything but manage users)
 * becomes admin, the role closest to what they had. API keys record the person who made them, so a
 * key never holds more than that person's role and ends with them; audit entries name the person
 * behind an API key.
 */
export const teams: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('account_users').addColumn('name', 'text').execute();
    await db.schema
      .alterTable('account_users')
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
      .execute();
    await sql`update account_users set status = 'invited'
      where role <> 'owner' and last_signed_in_at is null`.execute(db);
    await sql`update account_users set role = 'admin' where role = 'member'`.execute(db);

    await db.schema.alterTable('api_keys').addColumn('created_by_user_id', 'text').execute();
    await db.schema
      .createIndex('api_keys_created_by_user')
      .on('api_keys')
      .column('created_by_user_id')
      .execute();
    // Keys already issued to agents (OAuth, device sign-in) name their person in the audit log.
    await sql`update api_keys set created_by_user_id = (
        select a.actor_id from audit_entries a
        where a.resource_id = api_keys.id and a.actor_type = 'user'
          and a.action in ('oauth.token_issued', 'oauth.device_key_issued')
        order by a.created_at limit 1)
      where exists (
        select 1 from audit_entries a
        where a.resource_id = api_keys.id and a.actor_type = 'user'
          and a.action in ('oauth.token_issued', 'oauth.device_key_issued'))`.execute(db);

    await db.schema.alterTable('audit_entries').addColumn('person_id', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('audit_entries').dropColumn('person_id').execute();
    await db.schema.dropIndex('api_keys_created_by_user').execute();
    await db.schema.alterTable('api_keys').dropColumn('created_by_user_id').execute();
    await sql`update account_users set role = 'member' where role in ('admin', 'viewer')`.execute(db);
    await db.schema.alterTable('account_users').dropColumn('status').execute();
    await db.schema.alterTable('account_users').dropColumn('name').execute();
  },
};
