/** What became of one input of a batch: its own value, or its own error. */
export type BatchOutcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Waiting<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Many small database operations done as one, where one of many costs about what one of one does (a
 * commit, a round trip): outcomes written together (group commit, webhook settles), look-ups read
 * together (BatchLoader). The first input handed in is handled at the end of the current turn of the
 * event loop, so inputs handed in during the same turn (replies read in one pass) join it; whatever is
 * handed in while a batch runs waits for it and goes into the next. One batch runs at a time, of at
 * most `max` inputs.
 *
 * `runMany` says what became of each input, in the order handed in; when it throws, every input of
 * the batch is rejected with its error.
 */
export class Batcher<I, O> {
  private pending: Waiting<I, O>[] = [];
  private running = false;

  constructor(
    private readonly runMany: (inputs: I[]) => Promise<BatchOutcome<O>[]>,
    private readonly max: number,
  ) {}

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (!this.running) void this.runAll();
    });
  }

  /** Runs batches until nothing is pending. Never rejects: each outcome goes to its own promise. */
  private async runAll(): Promise<void> {
    this.running = true;
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.pending.length > 0) await this.runBatch(this.pending.splice(0, this.max));
    } finally {
      this.running = false;
    }
  }

  private async runBatch(batch: Waiting<I, O>[]): Promise<void> {
    let outcomes: BatchOutcome<O>[];
    try {
      outcomes = await this.runMany(batch.map((waiting) => waiting.input));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    batch.forEach((waiting, i) => {
      const outcome = outcomes[i];
      if (outcome === undefined)
        waiting.reject(new Error('the batch gave fewer outcomes than it was given inputs'));
      else if (outcome.ok) waiting.resolve(outcome.value);
      else waiting.reject(outcome.error);
    });
  }
}
