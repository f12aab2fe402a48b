import type { TestProject } from 'vitest/node';
import { buildService, type Build } from './helpers/built.js';

/**
 * Builds the service once per test run (`npm run build`'s output, in a folder of its own under .tmp/),
 * so every test that starts the CLI as a process (`serve`, `api`, `worker`, `mcp`, admin commands)
 * runs the compiled program the `intake` bin runs in production, and none pays for compiling the
 * TypeScript sources again in each child process.
 */
let build: Build | undefined;

export function setup(project: TestProject): void {
  build = buildService();
  project.provide('builtBin', build.bin);
}

export function teardown(): void {
  build?.remove();
}

declare module 'vitest' {
  export interface ProvidedContext {
    builtBin: string;
  }
}
