/** What became of one input of a batch: its own value, or its own error. */
export type BatchOutcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Waiting<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Many small writes recorded together, where one write of many costs about what one write of one does
 * (a commit, a round trip). The first input handed in is written at the end of the current turn of
 * the event loop, so inputs handed in during the same turn (outcomes read in one pass) join it;
 * whatever is handed in while a batch is written waits for it and goes into the next. One batch is
 * written at a time, of at most `max` inputs.
 *
 * `writeMany` says what became of each input, in the order handed in; when it throws, every input of
 * the batch is rejected with its error.
 */
export class Batcher<I, O> {
  private pending: Waiting<I, O>[] = [];
  private writing = false;

  constructor(
    private readonly writeMany: (inputs: I[]) => Promise<BatchOutcome<O>[]>,
    private readonly max: number,
  ) {}

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (!this.writing) void this.writeAll();
    });
  }

  /** Writes batches until nothing is pending. Never rejects: each outcome goes to its own promise. */
  private async writeAll(): Promise<void> {
    this.writing = true;
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.pending.length > 0) await this.write(this.pending.splice(0, this.max));
    } finally {
      this.writing = false;
    }
  }

  private async write(batch: Waiting<I, O>[]): Promise<void> {
    let outcomes: BatchOutcome<O>[];
    try {
      outcomes = await this.writeMany(batch.map((waiting) => waiting.input));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    batch.forEach((waiting, i) => {
      const outcome = outcomes[i];
      if (outcome === undefined)
        waiting.reject(new Error('the batch wrote fewer outcomes than it was given'));
      else if (outcome.ok) waiting.resolve(outcome.value);
      else waiting.reject(outcome.error);
    });
  }
}
