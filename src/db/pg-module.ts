import type PgModule from 'pg';
import { onFirstUse } from '../lib/on-first-use.js';

/**
 * The PostgreSQL driver, loaded by the first PostgreSQL connection a process opens (a pool or the job
 * wake-up listener): an installation on SQLite, the default, never loads it (about 3 MB of resident
 * memory). Its one global setting comes with it: int8 (bigint) as a JS number, since our counters stay
 * far below 2^53.
 */
export const pgModule = onFirstUse<typeof PgModule>('pg', (pg) =>
  pg.types.setTypeParser(20, (value) => Number(value)),
);
