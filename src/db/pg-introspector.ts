import {
  DEFAULT_MIGRATION_LOCK_TABLE,
  DEFAULT_MIGRATION_TABLE,
  PostgresDialect,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type DatabaseMetadataOptions,
  type Kysely,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';

interface ColumnRow {
  schema: string;
  table: string;
  table_type: string;
  column: string;
  not_null: boolean;
  has_default: boolean;
  auto_incrementing: boolean;
  type: string;
  type_schema: string;
  column_description: string | null;
}

/**
 * Kysely's introspection, limited to the schemas on the connection's search path (this installation's
 * own; the migrator is its one user). Kysely's own reads the tables of every schema of the database and
 * looks each schema and table up by name as it goes, so a schema that another installation drops during
 * that read (a database shared by several installations, as tests share one) failed a migration with
 * "schema … does not exist" or "relation … does not exist". Here every lookup is by the catalog's ids,
 * of tables in our own schemas.
 */
export class SearchPathIntrospector implements DatabaseIntrospector {
  // The catalog tables are not in the application's schema type.
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const result = await sql<{ name: string }>`select unnest(current_schemas(false)) as name`.execute(
      this.db,
    );
    return result.rows.map((row) => ({ name: row.name }));
  }

  async getTables(
    options: DatabaseMetadataOptions = { withInternalKyselyTables: false },
  ): Promise<TableMetadata[]> {
    const internal = [DEFAULT_MIGRATION_TABLE, DEFAULT_MIGRATION_LOCK_TABLE];
    const result = await sql<ColumnRow>`
      select ns.nspname as schema, c.relname as table, c.relkind as table_type,
        a.attname as column, a.attnotnull as not_null, a.atthasdef as has_default,
        (a.attidentity <> '' or coalesce(pg_get_expr(d.adbin, d.adrelid) like 'nextval(%', false)) as auto_incrementing,
        typ.typname as type, dtns.nspname as type_schema,
        col_description(a.attrelid, a.attnum) as column_description
      from pg_catalog.pg_namespace ns
      join pg_catalog.pg_class c on c.relnamespace = ns.oid
      join pg_catalog.pg_attribute a on a.attrelid = c.oid
      join pg_catalog.pg_type typ on typ.oid = a.atttypid
      join pg_catalog.pg_namespace dtns on dtns.oid = typ.typnamespace
      left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where ns.nspname = any(current_schemas(false))
        and c.relkind in ('r', 'v', 'p')
        and a.attnum >= 0 and not a.attisdropped
        ${options.withInternalKyselyTables ? sql`` : sql`and c.relname not in (${sql.join(internal)})`}
      order by ns.nspname, c.relname, a.attnum`.execute(this.db);
    const tables = new Map<string, TableMetadata & { columns: TableMetadata['columns'][number][] }>();
    for (const row of result.rows) {
      const key = `${row.schema}.${row.table}`;
      let table = tables.get(key);
      if (!table) {
        table = { name: row.table, schema: row.schema, isView: row.table_type === 'v', columns: [] };
        tables.set(key, table);
      }
      table.columns.push({
        name: row.column,
        dataType: row.type,
        dataTypeSchema: row.type_schema,
        isNullable: !row.not_null,
        hasDefaultValue: row.has_default,
        isAutoIncrementing: row.auto_incrementing,
        ...(row.column_description === null ? {} : { comment: row.column_description }),
      });
    }
    return [...tables.values()];
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) };
  }
}

/** PostgreSQL with the introspection above. */
export class SearchPathPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SearchPathIntrospector(db);
  }
}
