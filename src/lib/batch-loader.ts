import { Batcher } from './batcher.js';

/** Keys a BatchLoader reads with one query at most, unless it is given another bound. */
export const BATCH_LOADER_MAX = 100;

/**
 * Coalesces look-ups by key into one query: those asked for in the same turn of the event loop (jobs
 * a worker starts together), and those asked for while the last query ran (jobs starting one after
 * another as slots free). Four webhook attempts starting at once read their four deliveries with one
 * `where id in (…)` instead of four statements, one round trip on PostgreSQL instead of four. Nothing
 * is kept between queries: every look-up reads the database as it is at or after the moment it was
 * asked for.
 */
export class BatchLoader<V> {
  private readonly batches: Batcher<string, V | undefined>;

  constructor(
    /** Reads the rows of these keys (at most `max`), each under its key. */
    loadMany: (keys: string[]) => Promise<Map<string, V>>,
    max = BATCH_LOADER_MAX,
  ) {
    this.batches = new Batcher(async (keys) => {
      const rows = await loadMany([...new Set(keys)]);
      return keys.map((key) => ({ ok: true, value: rows.get(key) }));
    }, max);
  }

  load(key: string): Promise<V | undefined> {
    return this.batches.run(key);
  }
}
