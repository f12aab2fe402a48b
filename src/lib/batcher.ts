/** What became of one input of a batch: its own value, or its own error. */
export type BatchOutcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

/**
 * A batch that waits for inputs still on their way: before it runs, while `expecting()` says more are
 * coming (work under way that will hand one in), it waits up to `ms` for them, and runs as soon as it
 * is full or nothing more is expected. Where one batch costs about what one input does (a commit),
 * a steady stream of inputs a few at a time is then handled in fewer, fuller batches; an input handed
 * in alone, with nothing else under way, is handled at the end of its turn as without it.
 */
export interface Gathering {
  expecting(): boolean;
  ms: number;
}

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
 * the batch is rejected with its error. With `gathering`, each batch may first wait for more (Gathering).
 */
export class Batcher<I, O> {
  private pending: Waiting<I, O>[] = [];
  private running = false;
  /** Ends the gathering wait under way, if any. */
  private stopGathering: (() => void) | undefined;

  constructor(
    private readonly runMany: (inputs: I[]) => Promise<BatchOutcome<O>[]>,
    private readonly max: number,
    private readonly gathering?: Gathering,
  ) {}

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (!this.running) void this.runAll();
      else if (this.stopGathering && !this.worthGathering()) this.stopGathering();
    });
  }

  /** Runs batches until nothing is pending. Never rejects: each outcome goes to its own promise. */
  private async runAll(): Promise<void> {
    this.running = true;
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.pending.length > 0) {
        if (this.worthGathering()) await this.gather();
        await this.runBatch(this.pending.splice(0, this.max));
      }
    } finally {
      this.running = false;
    }
  }

  private worthGathering(): boolean {
    return this.gathering !== undefined && this.pending.length < this.max && this.gathering.expecting();
  }

  /** Waits for more inputs: until the batch is full, nothing more is expected, or `ms` have passed. */
  private gather(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.stopGathering?.(), this.gathering?.ms ?? 0);
      this.stopGathering = () => {
        clearTimeout(timer);
        this.stopGathering = undefined;
        resolve();
      };
    });
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
