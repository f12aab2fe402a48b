import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCliProcess, type CliProcess } from './helpers/processes.js';

/**
 * An idle service costs next to nothing: a `serve` process with nothing to do (SQLite, its worker
 * polling once a second) wakes its main thread about ten times a second. Counted by the kernel
 * (voluntary context switches of the main thread, Linux's /proc), not timed.
 */
const LINUX = existsSync('/proc/self/task');

function mainThreadSwitches(pid: number): number {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  const match = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status);
  if (!match) throw new Error(`no voluntary_ctxt_switches in /proc/${pid}/task/${pid}/status`);
  return Number(match[1]);
}

describe.runIf(LINUX)('an idle serve process', () => {
  let dataDir: string;
  let server: CliProcess;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'intake-idle-'));
    server = await startCliProcess('serve', { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  });

  afterAll(async () => {
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('wakes its main thread a few times a second, not a hundred (the event-loop metric sampled every 100 ms)', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // past the start-up's own work
    const before = mainThreadSwitches(server.pid);
    const seconds = 3;
    await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
    const perSecond = (mainThreadSwitches(server.pid) - before) / seconds;
    // Sampling the event loop every 10 ms alone wakes it 100 times a second; measured 11 with 100 ms.
    expect(perSecond).toBeLessThan(40);
    expect(perSecond).toBeGreaterThan(0); // the worker's poll: the count is live
  });
});
