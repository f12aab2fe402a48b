/**
 * Values made from a string key, kept for the keys used lately: a hot path that makes the same value
 * again and again (a parsed text, a prepared statement, a quoted URL) makes it once. At most `max` keys
 * are kept, and all are dropped when that many are: no bookkeeping of which was used last on a path
 * where every look-up counts. A key longer than `maxKeyLength` is made anew each time and never kept,
 * so long keys cannot fill the memory.
 */
export class KeptLately<V> {
  private readonly values = new Map<string, V>();

  constructor(
    private readonly make: (key: string) => V,
    private readonly max: number,
    private readonly maxKeyLength = Number.POSITIVE_INFINITY,
  ) {}

  get(key: string): V {
    let value = this.values.get(key);
    if (value === undefined) {
      value = this.make(key);
      if (key.length <= this.maxKeyLength) {
        if (this.values.size >= this.max) this.values.clear();
        this.values.set(key, value);
      }
    }
    return value;
  }

  /** Drops the value kept for `key`, or every value. */
  forget(key?: string): void {
    if (key === undefined) this.values.clear();
    else this.values.delete(key);
  }
}
