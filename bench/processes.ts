/**
 * The service processes the scale-out benchmarks spawn through the CLI (`api` in bench:scale, `worker`
 * in bench:workers), each in a CPU cgroup of its own in the CPU-quota mode (bench/cpu.ts), and the
 * SIGINT/SIGTERM handling that stops them (which removes their cgroups) and cleans up: a signal does
 * not run the scenarios' `finally`, and a cgroup or schema left behind would outlive the run.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import pg from 'pg';
import { confineToCpuQuota, removeCgroup, type CpuQuota } from './cpu.js';
import { toError } from './load.js';

/**
 * `node --import tsx`: one process. (The tsx CLI runs the program in a child process: a SIGKILL would
 * kill the wrapper and leave the service running.)
 */
export const TSX = ['--import', 'tsx'];

/** Stops of the processes spawned and not yet exited, and cleanups of the scenarios in progress. */
const liveStops = new Set<() => Promise<void>>();
const pendingCleanups = new Set<() => Promise<void>>();

export interface Started<T> {
  /** What the readiness check found in the output (the API's URL, say). */
  ready: T;
  pid: number;
  /** SIGTERM (SIGKILL after 10 s); settles once the process has exited and its cgroup is removed. */
  stop: () => Promise<void>;
}

interface Spawned {
  child: ChildProcessByStdio<null, Readable, Readable>;
  pid: number;
  /** The process's cgroup once it is in it (undefined without a quota); rejects when it cannot be. */
  cgroup: Promise<string | undefined>;
  stop: () => Promise<void>;
}

/** Spawns `src/cli.ts <role>` and, with a quota, moves it into a cgroup of its own at once. */
function spawnConfined(role: string, env: NodeJS.ProcessEnv, quota: CpuQuota | undefined): Spawned {
  // BENCH_CPU_PROF_DIR: each spawned process writes a V8 CPU profile there when it exits.
  const profile = process.env.BENCH_CPU_PROF_DIR;
  const flags = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
  const child = spawn(process.execPath, [...flags, ...TSX, 'src/cli.ts', role], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid ?? 0;
  // At once: the service takes hundreds of milliseconds to start, so it does no work unlimited.
  const cgroup = quota === undefined ? Promise.resolve(undefined) : confineToCpuQuota(quota, pid);
  // Settles once the process has exited and its cgroup is removed (which needs the process gone).
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(async () => {
    const dir = await cgroup.catch(() => undefined);
    if (dir === undefined) return;
    await removeCgroup(dir).catch((error: unknown) => {
      process.stderr.write(`\nWarning: ${toError(error).message}\n`);
      process.exitCode = 1;
    });
  });
  const stop = (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    // Its cgroup can only go once the process has: one that ignores SIGTERM is killed after 10 s.
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    return gone.finally(() => clearTimeout(killer));
  };
  liveStops.add(stop);
  void gone.then(() => liveStops.delete(stop));
  return { child, pid, cgroup, stop };
}

/**
 * Starts `src/cli.ts <role>` (in a cgroup of its own when a quota is given) and resolves once
 * `readiness` finds what it waits for in the output and the process is in its cgroup. A process that
 * fails to start, or whose cgroup cannot be set up, is stopped before the promise rejects, so nothing
 * is left.
 */
export function startRole<T>(
  role: string,
  env: NodeJS.ProcessEnv,
  quota: CpuQuota | undefined,
  readiness: (output: string) => T | undefined,
): Promise<Started<T>> {
  const { child, pid, cgroup, stop } = spawnConfined(role, env, quota);
  let out = '';
  return new Promise((resolve, reject) => {
    const fail = (error: Error): void => {
      clearTimeout(timer);
      void stop().then(() => reject(error));
    };
    const timer = setTimeout(() => fail(new Error(`${role} did not start: ${out}`)), 60_000);
    cgroup.catch((error: unknown) =>
      fail(new Error(`Could not put ${role} process ${pid} into a CPU cgroup: ${toError(error).message}`)),
    );
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const ready = readiness(out);
      if (ready === undefined) return;
      // Not ready before it is in its cgroup (a rejected cgroup is handled by `fail` above).
      cgroup.then(
        () => {
          clearTimeout(timer);
          resolve({ ready, pid, stop });
        },
        () => undefined,
      );
    });
    child.once('exit', (code) => fail(new Error(`${role} exited with ${code}: ${out}`)));
  });
}

/**
 * Starts `count` processes at once. Each one that starts is pushed into `started` (for the scenario's
 * cleanup to stop) even when another fails; then the first failure, if any, is thrown.
 */
export async function startAll<P>(count: number, start: () => Promise<P>, started: P[]): Promise<void> {
  const starts = await Promise.allSettled(Array.from({ length: count }, start));
  for (const s of starts) if (s.status === 'fulfilled') started.push(s.value);
  const failed = starts.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw toError(failed.reason);
}

/**
 * Makes a scenario's cleanup run once, whether called (from the scenario's `finally`) or on a signal
 * (after the spawned processes are stopped), whichever comes first. Returns the call.
 */
export function cleanupOnce(cleanup: () => Promise<void>): () => Promise<void> {
  let cleaned: Promise<void> | undefined;
  const once = (): Promise<void> => (cleaned ??= cleanup());
  pendingCleanups.add(once);
  return () => once().finally(() => pendingCleanups.delete(once));
}

/**
 * Until the returned function is called: on SIGINT/SIGTERM, stops the spawned processes (which
 * removes their cgroups), runs the pending cleanups, then exits with 130. `role` names the processes.
 */
export function cleanUpOnSignals(role: string): () => void {
  const onSignal = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: stopping ${liveStops.size} ${role} process(es) and cleaning up\n`);
    void Promise.all([...liveStops].map((stop) => stop()))
      .then(() => Promise.all([...pendingCleanups].map((cleanup) => cleanup())))
      .finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/** Whether PostgreSQL answers at this URL (a benchmark skips its PostgreSQL part, with a notice, when not). */
export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_500 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** Drops a benchmark's schema (and everything in it) from the PostgreSQL at `url`. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}
