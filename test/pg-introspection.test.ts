import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES, TEST_POSTGRES_URL } from './helpers/env.js';
import { openTestDatabase } from './helpers/server.js';

/**
 * The migrator's introspection on PostgreSQL reads this installation's schemas only. Reading every
 * schema of the database failed migrations while another installation (another test file) dropped its
 * schema during that read.
 */
describe.runIf(DATABASES.includes('postgres'))('introspection on postgres', () => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  const other = `t_other_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });

  beforeAll(async () => {
    opened = await openTestDatabase('postgres');
    await admin.connect();
    await admin.query(`create schema "${other}"`);
    await admin.query(`create table "${other}".elsewhere (id serial primary key, note text)`);
  });

  afterAll(async () => {
    await admin.query(`drop schema if exists "${other}" cascade`);
    await admin.end();
    await opened.close();
  });

  it('lists the tables of its own schema, with their columns, and none of another schema', async () => {
    const tables = await opened.db.kysely.introspection.getTables();
    expect(new Set(tables.map((table) => table.schema))).toEqual(new Set([schemaOf()]));
    expect(await opened.db.kysely.introspection.getSchemas()).toEqual([{ name: schemaOf() }]);
    expect(tables.some((table) => table.name === 'elsewhere')).toBe(false);

    const intakes = tables.find((table) => table.name === 'intakes');
    expect(intakes?.isView).toBe(false);
    const id = intakes?.columns.find((column) => column.name === 'id');
    expect(id).toMatchObject({ dataType: 'text', isNullable: false, isAutoIncrementing: false });
    const due = intakes?.columns.find((column) => column.name === 'due_date');
    expect(due?.isNullable).toBe(true);
  });

  it("lists the migrator's own tables only when asked", async () => {
    const names = async (withInternalKyselyTables: boolean) =>
      (await opened.db.kysely.introspection.getTables({ withInternalKyselyTables })).map((t) => t.name);
    expect(await names(false)).not.toContain('kysely_migration');
    expect(await names(true)).toEqual(expect.arrayContaining(['kysely_migration', 'kysely_migration_lock']));
  });

  it('sees a serial column as auto-incrementing', async () => {
    // A table of our own schema with a serial key, made beside the migrated ones.
    await admin.query(`create table "${schemaOf()}".counted (id serial primary key)`);
    const tables = await opened.db.kysely.introspection.getTables();
    const counted = tables.find((table) => table.name === 'counted');
    expect(counted?.columns[0]).toMatchObject({
      name: 'id',
      isAutoIncrementing: true,
      hasDefaultValue: true,
    });
  });

  /** The schema openTestDatabase made for this file (the schema parameter of its DATABASE_URL). */
  function schemaOf(): string {
    const name = new URL(opened.env.DATABASE_URL ?? '').searchParams.get('schema');
    if (!name) throw new Error('no schema in the test database URL');
    return name;
  }
});
