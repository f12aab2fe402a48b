/**
 * Work to finish before the process exits on purpose (after a graceful stop): flushing telemetry.
 * `process.exit` skips 'beforeExit', so the CLI runs these first.
 */
const hooks: (() => Promise<unknown>)[] = [];

export function onExit(hook: () => Promise<unknown>): void {
  hooks.push(hook);
}

/** Runs every hook (errors are ignored: the process is leaving either way). */
export async function runExitHooks(): Promise<void> {
  await Promise.allSettled(hooks.map((hook) => hook()));
}
