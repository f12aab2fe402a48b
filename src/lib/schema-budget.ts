/**
 * A time budget for checking structured values against their item's JSON Schema.
 *
 * Why: Ajv is synchronous, and the limits at definition (domain/schema-limits.ts) bound one check's
 * work only to (expanded subschemas × value nodes) ≤ 2,000 × 10,000: a schema and value inside every
 * limit held the event loop for tens of seconds (bench/attacks.ts). So a value whose estimated cost
 * is above INLINE_COST_LIMIT is checked in a worker thread (a small pool, reused, each with its own
 * compiled-schema cache) under a deadline, VALIDATION_TIME_BUDGET_MS: past it the worker is
 * terminated and replaced, and the value is refused with TIMED_OUT_MESSAGE. Cheap values, nearly
 * all of them, are checked inline without a thread hop.
 */
import type { Worker } from 'node:worker_threads';
import {
  expandedSubschemas,
  schemaCostProblem,
  valueNodes,
  valueSizeProblem,
} from '../domain/schema-limits.js';
import type { SchemaValidator } from '../domain/values.js';
import {
  checkJsonSchema,
  schemaCheckIssues,
  schemaCheckMessage,
  type SchemaCheck,
  type SchemaIssue,
} from './json-schema.js';
import type { SchemaJob } from './schema-worker.js';
import { spawnModuleWorker } from './module-worker.js';

export const DEFAULT_VALIDATION_TIME_BUDGET_MS = 1000;

/**
 * Cost (expanded subschemas × value nodes) up to which a value is checked inline. The worst case
 * measured within the limits costs about 3 µs per unit (a 1,963-subschema schema of `format`
 * branches against 9,999 strings), so an inline check holds the loop 15 ms at most; an address
 * form (a dozen subschemas, a dozen fields) costs about 150.
 */
export const INLINE_COST_LIMIT = 5_000;

export const TIMED_OUT_MESSAGE = "the value took too long to check against the item's schema";

/** Workers in the pool: checks above the inline cost are rare, and each takes one core while it runs. */
const POOL_SIZE = 2;
/** Checks waiting for a worker; more are refused as busy rather than queued without end. */
const MAX_WAITING = 32;
/**
 * Compiling a schema is its own cost, bounded by the limits at definition (about 1.5 s for the
 * largest measured), and happens once per worker: it is not charged to the value's budget.
 */
const COMPILE_ALLOWANCE_MS = 30_000;

/** What one check of this value may cost, in (expanded subschemas × value nodes). */
export function checkCost(schema: Record<string, unknown>, value: unknown): number {
  return expandedSubschemas(schema) * valueNodes(value);
}

interface Waiting {
  job: Omit<SchemaJob, 'id'>;
  resolve: (check: SchemaCheck) => void;
}

interface WorkerReply {
  id: number;
  compiled?: true;
  check?: SchemaCheck;
}

/**
 * No check can be made now (too many waiting, or shutting down): the HTTP layer answers 503
 * service_unavailable with the message. A plain error here, since lib/ sits below http/.
 */
export class SchemaChecksUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaChecksUnavailableError';
  }
}

export class SchemaChecker {
  private readonly idle: Worker[] = [];
  private readonly running = new Set<Worker>();
  private readonly waiting: Waiting[] = [];
  private sequence = 0;
  private closed = false;
  /** Checks run inline, in a worker, and refused past the budget (tests and metrics). */
  readonly counts = { inline: 0, worker: 0, overBudget: 0 };

  constructor(readonly budgetMs: number = DEFAULT_VALIDATION_TIME_BUDGET_MS) {}

  /** Checks the value: inline when cheap, else in a worker under the time budget. */
  async check(schema: Record<string, unknown>, value: unknown): Promise<SchemaCheck> {
    const tooLarge = valueSizeProblem(value);
    if (tooLarge) return { kind: 'too_large', message: tooLarge };
    // A schema over its limits (stored before they existed) is refused as compiling refuses it,
    // before its cost is estimated.
    const refused = schemaCostProblem(schema);
    if (refused) return { kind: 'schema_refused', message: refused };
    if (checkCost(schema, value) <= INLINE_COST_LIMIT) {
      this.counts.inline++;
      return checkJsonSchema(schema, value);
    }
    if (this.closed) throw new SchemaChecksUnavailableError('The service is shutting down.');
    if (this.waiting.length >= MAX_WAITING) {
      throw new SchemaChecksUnavailableError(
        'Too many answers are being checked right now: send it again shortly.',
      );
    }
    this.counts.worker++;
    return new Promise((resolve) => {
      this.waiting.push({ job: { schema, value }, resolve });
      this.pump();
    });
  }

  async message(schema: Record<string, unknown>, value: unknown): Promise<string | undefined> {
    return schemaCheckMessage(await this.check(schema, value));
  }

  async issues(schema: Record<string, unknown>, value: unknown): Promise<SchemaIssue[]> {
    return schemaCheckIssues(await this.check(schema, value));
  }

  /**
   * Checks every (schema, value) pair now and answers the synchronous domain checks
   * (checkSubmission, answerLostBy) from the results: run before a transaction opens, so no lock is
   * held while a worker checks. A pair not checked beforehand (the value changed meanwhile) is
   * checked inline if cheap, else refused with a request to send again.
   */
  async prepared(
    pairs: Array<{ schema: Record<string, unknown>; value: unknown }>,
  ): Promise<SchemaValidator> {
    const results = new Map<string, string | undefined>();
    for (const { schema, value } of pairs) {
      const key = pairKey(schema, value);
      if (!results.has(key)) results.set(key, await this.message(schema, value));
    }
    return (schema, value) => {
      const key = pairKey(schema, value);
      if (results.has(key)) return results.get(key);
      const tooLarge = valueSizeProblem(value);
      if (tooLarge) return tooLarge;
      if (schemaCostProblem(schema) || checkCost(schema, value) <= INLINE_COST_LIMIT)
        return schemaCheckMessage(checkJsonSchema(schema, value));
      return 'the value changed while it was being checked: send it again';
    };
  }

  /** Terminates the workers; checks still waiting are answered as unchecked. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiting of this.waiting.splice(0)) {
      waiting.resolve({ kind: 'unchecked', message: 'the service stopped before the value was checked' });
    }
    await Promise.all([...this.idle.splice(0), ...this.running].map((worker) => worker.terminate()));
    this.running.clear();
  }

  private pump(): void {
    while (this.waiting.length > 0 && (this.idle.length > 0 || this.running.size < POOL_SIZE)) {
      const next = this.waiting.shift() as Waiting;
      this.run(
        this.idle.pop() ??
          spawnModuleWorker(import.meta.url, 'schema-worker', { maxOldGenerationSizeMb: 512 }),
        next,
      );
    }
  }

  private run(worker: Worker, { job, resolve }: Waiting): void {
    const id = ++this.sequence;
    this.running.add(worker);
    let settled = false;
    const finish = (check: SchemaCheck, keepWorker: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      this.running.delete(worker);
      if (keepWorker && !this.closed) this.idle.push(worker);
      else void worker.terminate();
      resolve(check);
      this.pump();
    };
    // Past the deadline the worker is terminated mid-check (the pool starts another when needed).
    const overBudget = () => {
      this.counts.overBudget++;
      finish({ kind: 'unchecked', message: TIMED_OUT_MESSAGE }, false);
    };
    const onMessage = (reply: WorkerReply) => {
      if (reply.id !== id) return;
      if (reply.compiled) {
        clearTimeout(timer);
        timer = setTimeout(overBudget, this.budgetMs);
      } else if (reply.check) {
        finish(reply.check, true);
      }
    };
    const onError = (error: Error) =>
      finish(
        {
          kind: 'unchecked',
          message:
            'code' in error && error.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? "the value needed too much memory to check against the item's schema"
              : "the value could not be checked against the item's schema",
        },
        false,
      );
    const onExit = () =>
      finish(
        { kind: 'unchecked', message: "the value could not be checked against the item's schema" },
        false,
      );
    let timer = setTimeout(overBudget, COMPILE_ALLOWANCE_MS);
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.postMessage({ id, ...job } satisfies SchemaJob);
  }
}

function pairKey(schema: Record<string, unknown>, value: unknown): string {
  return `${JSON.stringify(schema)}\u0000${JSON.stringify(value)}`;
}
