import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * Starts a worker thread on a module beside the caller (`name` without extension): the compiled
 * module in production; in development and tests the TypeScript source, through tsx's loader
 * registered inside the worker first (a worker's --import does not apply to its entry). tsx's ESM
 * API is its .mjs build, beside the .cjs that require.resolve finds. The worker is unref'd: an idle
 * one does not keep the process alive.
 */
export function spawnModuleWorker(callerUrl: string, name: string, resourceLimits?: ResourceLimits): Worker {
  const options = resourceLimits ? { resourceLimits } : {};
  const worker = callerUrl.endsWith('.ts')
    ? new Worker(
        `(async () => {
          const { register } = await import(${JSON.stringify(tsxApi())});
          register();
          await import(${JSON.stringify(new URL(`./${name}.ts`, callerUrl).href)});
        })();`,
        { ...options, eval: true },
      )
    : new Worker(new URL(`./${name}.js`, callerUrl), options);
  worker.unref();
  return worker;
}

function tsxApi(): string {
  const cjs = createRequire(import.meta.url).resolve('tsx/esm/api');
  return pathToFileURL(cjs.replace(/\.cjs$/, '.mjs')).href;
}
