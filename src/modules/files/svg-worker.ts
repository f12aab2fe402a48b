/** The worker thread that sanitises uploaded SVGs (files/svg.ts): jsdom and DOMPurify load and run here. */
import { parentPort } from 'node:worker_threads';
import { sanitizeSvgHere } from './svg.js';

if (!parentPort) throw new Error('svg-worker runs only as a worker thread');
const port = parentPort;

port.on('message', (job: { id: number; text: string }) => {
  void sanitizeSvgHere(job.text).then(
    (result) => port.postMessage({ id: job.id, result }),
    (error: unknown) =>
      port.postMessage({
        id: job.id,
        result: {
          ok: false,
          reason: `the SVG could not be sanitised (${error instanceof Error ? error.message : 'error'})`,
        },
      }),
  );
});
