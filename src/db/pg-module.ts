import { createRequire } from 'node:module';
import type PgModule from 'pg';

let loaded: typeof PgModule | undefined;

/**
 * The PostgreSQL driver, loaded by the first PostgreSQL connection a process opens (a pool or the job
 * wake-up listener): an installation on SQLite, the default, never loads it (about 3 MB of resident
 * memory). Its one global setting comes with it: int8 (bigint) as a JS number, since our counters stay
 * far below 2^53.
 */
export function pgModule(): typeof PgModule {
  if (!loaded) {
    const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
    pg.types.setTypeParser(20, (value) => Number(value));
    loaded = pg;
  }
  return loaded;
}
