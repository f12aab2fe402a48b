/**
 * The worker thread that checks costly structured values against their item's JSON Schema
 * (lib/schema-budget.ts): the check runs here, off the event loop, and the thread is terminated
 * when it passes the time budget. Compiled schemas are cached here as on the main thread
 * (json-schema.ts's bounded cache), so a reused worker compiles each schema once.
 */
import { parentPort } from 'node:worker_threads';
import { checkJsonSchema, compileJsonSchema } from './json-schema.js';

export interface SchemaJob {
  id: number;
  schema: Record<string, unknown>;
  value: unknown;
}

if (!parentPort) throw new Error('schema-worker runs only as a worker thread');
const port = parentPort;

port.on('message', (job: SchemaJob) => {
  // Compiling is reported apart: the time budget is the value's, compiling is the schema's cost
  // (bounded by its limits at definition).
  compileJsonSchema(job.schema);
  port.postMessage({ id: job.id, compiled: true });
  port.postMessage({ id: job.id, check: checkJsonSchema(job.schema, job.value) });
});
