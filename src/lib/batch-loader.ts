/**
 * Coalesces look-ups by key that are asked for in the same synchronous pass (jobs a worker starts
 * together) into one query: four webhook attempts starting at once read their four deliveries with
 * one `where id in (…)` instead of four statements, one round trip on PostgreSQL instead of four.
 * Nothing is kept between passes: every look-up reads the database as it is now.
 */
export class BatchLoader<V> {
  private waiting = new Map<
    string,
    Array<{ resolve: (row: V | undefined) => void; reject: (e: unknown) => void }>
  >();
  private scheduled = false;

  constructor(
    /** Reads the rows of these keys (at most `max`), each under its key. */
    private readonly loadMany: (keys: string[]) => Promise<Map<string, V>>,
    private readonly max = 100,
  ) {}

  load(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(key);
      if (list) list.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const waiting = this.waiting;
    this.waiting = new Map();
    this.scheduled = false;
    const keys = [...waiting.keys()];
    for (let start = 0; start < keys.length; start += this.max) {
      const chunk = keys.slice(start, start + this.max);
      try {
        const rows = await this.loadMany(chunk);
        for (const key of chunk) for (const { resolve } of waiting.get(key) ?? []) resolve(rows.get(key));
      } catch (error) {
        for (const key of chunk) for (const { reject } of waiting.get(key) ?? []) reject(error);
      }
    }
  }
}
