import type { Kysely, Migration } from 'kysely';

/**
 * Who wrote a comment, as they were called when they wrote it: the person's name (their email when
 * they gave none) for a dashboard comment, the key's name for one made with an API key. Kept with the
 * comment so that a conversation still names a person after they leave the account or a key after it
 * is revoked. Comments written before this have none (the API then answers name: null).
 */
export const commentActorName: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('item_comments').addColumn('actor_name', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('item_comments').dropColumn('actor_name').execute();
  },
};
