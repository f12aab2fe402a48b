import type { Kysely, Migration } from 'kysely';

/** The client's country (ISO 3166-1 alpha-2): the country of phone numbers typed without "+". */
export const clientCountry: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('intakes').addColumn('client_country', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('intakes').dropColumn('client_country').execute();
  },
};
