/**
 * CPU of the service processes the scale-out benchmarks spawn (the `api` processes of bench:scale, the
 * `worker` processes of bench:workers): the CPU-quota mode's cgroups (BENCH_SCALE_CPU_QUOTA and
 * BENCH_WORKERS_CPU_QUOTA, see bench/scale.ts), one per process with a CFS quota, on cgroup v2 or v1;
 * and the CPU time a process has used, read from /proc, for the per-process CPU figures. Kept apart
 * from the benchmarks so that the cgroup handling (Linux- and root-only) can be read and checked on
 * its own.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { positiveNumberFromEnv, toError } from './load.js';

/** The CFS period a CPU quota is a share of: 100 ms, the kernel's default. */
const CPU_PERIOD_US = 100_000;
/** The unit of the CPU times in /proc/<pid>/stat (USER_HZ, almost always 100). */
const CLOCK_TICKS_PER_SECOND = clockTicksPerSecond();

/** Counts the cgroups created, so that each one's name is unique (with the bench's pid). */
let cgroupCount = 0;

/** Where the spawned processes' cgroups are created and how a quota is written there. */
export interface CpuController {
  version: 1 | 2;
  /** The bench's own cgroup in that hierarchy: the spawned processes' cgroups are its children. */
  parent: string;
}

export interface CpuQuota {
  /** The environment variable that set it (named in errors). */
  variable: string;
  /** A fraction of one CPU per spawned process. */
  fraction: number;
  quotaUs: number;
  /** The cgroups' names start with it (then the bench's pid and a counter): which bench left one behind. */
  cgroupPrefix: string;
  controller: CpuController;
}

/**
 * The CPU-quota mode's settings from `variable` (a fraction of one CPU, at least 0.01), with a cgroup
 * hierarchy proven usable; undefined when the variable is unset.
 */
export async function cpuQuotaFromEnv(variable: string, cgroupPrefix: string): Promise<CpuQuota | undefined> {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return undefined;
  const fraction = positiveNumberFromEnv(variable, 0);
  const quotaUs = Math.round(fraction * CPU_PERIOD_US);
  // The kernel refuses quotas under 1 ms.
  if (quotaUs < 1_000) throw new Error(`${variable} must be at least 0.01, got "${raw}"`);
  const settings = { variable, fraction, quotaUs, cgroupPrefix };
  return { ...settings, controller: await findCpuController(settings) };
}

/** The quota without its hierarchy: what the probe needs before a hierarchy is chosen. */
type QuotaSettings = Omit<CpuQuota, 'controller'>;

/**
 * The cgroup hierarchies that could carry a CPU quota, v2 first: the mount points from
 * /proc/self/mounts joined with the bench's own cgroup from /proc/self/cgroup ("0::/path" for v2,
 * "N:cpu,cpuacct:/path" for v1).
 */
async function cpuControllerCandidates(): Promise<CpuController[]> {
  const mounts = (await readFile('/proc/self/mounts', 'utf8')).split('\n').map((line) => line.split(' '));
  const memberships = (await readFile('/proc/self/cgroup', 'utf8')).split('\n').map((line) => {
    const [id = '', controllers = '', ...path] = line.split(':');
    return { id, controllers: controllers.split(','), path: path.join(':') };
  });
  const candidates: CpuController[] = [];
  const v2Mount = mounts.find(([, , type]) => type === 'cgroup2')?.[1];
  const v2Own = memberships.find((m) => m.id === '0' && m.controllers.join('') === '');
  if (v2Mount !== undefined && v2Own) candidates.push({ version: 2, parent: join(v2Mount, v2Own.path) });
  const v1Mount = mounts.find(
    ([, , type, options = '']) => type === 'cgroup' && options.split(',').includes('cpu'),
  )?.[1];
  const v1Own = memberships.find((m) => m.controllers.includes('cpu'));
  if (v1Mount !== undefined && v1Own) candidates.push({ version: 1, parent: join(v1Mount, v1Own.path) });
  return candidates;
}

/**
 * The first hierarchy in which a cgroup with the quota can actually be created (a probe, removed at
 * once). Fails loudly otherwise: a run labelled quota-limited must never run without quotas.
 */
async function findCpuController(settings: QuotaSettings): Promise<CpuController> {
  const failures: string[] = [];
  for (const controller of await cpuControllerCandidates()) {
    try {
      if (controller.version === 2) await enableCpuControllerV2(controller.parent);
      await removeCgroup(await createCpuCgroup({ ...settings, controller }));
      return controller;
    } catch (error) {
      failures.push(`cgroup v${controller.version} at ${controller.parent}: ${toError(error).message}`);
    }
  }
  throw new Error(
    `${settings.variable} is set, but no cgroup with a CPU quota can be created here ` +
      `(${failures.join('; ') || 'no cgroup hierarchy with a cpu controller is mounted'}). ` +
      'It needs root and a writable cgroup v2 cpu.max or cgroup v1 cpu hierarchy; unset the variable to run without quotas.',
  );
}

/**
 * cgroup v2 gives a child cgroup cpu.max only when its parent lists cpu in cgroup.subtree_control.
 * The kernel refuses to enable it when the cpu controller is bound to a v1 hierarchy (hybrid systems)
 * or when the parent, not being the root, holds processes itself; the probe then reports that error.
 * Once enabled it is left so: sibling cgroups then share CPU by the default weight, without limits.
 */
async function enableCpuControllerV2(parent: string): Promise<void> {
  const available = (await readFile(join(parent, 'cgroup.controllers'), 'utf8')).split(/\s+/);
  if (!available.includes('cpu'))
    throw new Error('the cpu controller is not available in this cgroup (bound to cgroup v1?)');
  const enabled = (await readFile(join(parent, 'cgroup.subtree_control'), 'utf8')).split(/\s+/);
  if (!enabled.includes('cpu')) await writeFile(join(parent, 'cgroup.subtree_control'), '+cpu');
}

/** A new, empty cgroup limited to quotaUs per CPU_PERIOD_US, named after the bench's pid and a counter. */
async function createCpuCgroup({ controller, quotaUs, cgroupPrefix }: CpuQuota): Promise<string> {
  cgroupCount += 1;
  const dir = join(controller.parent, `${cgroupPrefix}-${process.pid}-${cgroupCount}`);
  await mkdir(dir);
  try {
    if (controller.version === 2) {
      await writeFile(join(dir, 'cpu.max'), `${quotaUs} ${CPU_PERIOD_US}`);
    } else {
      await writeFile(join(dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await writeFile(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
    }
  } catch (error) {
    await removeCgroup(dir);
    throw toError(error);
  }
  return dir;
}

/** Moves a process (all its threads, and children it spawns later) into a new cgroup of its own. */
export async function confineToCpuQuota(quota: CpuQuota, pid: number): Promise<string> {
  // Writing 0 to cgroup.procs would move the bench itself (0 is a failed spawn's stand-in pid here).
  if (pid <= 0) throw new Error('the process has no pid (spawn failed)');
  const dir = await createCpuCgroup(quota);
  try {
    await writeFile(join(dir, 'cgroup.procs'), String(pid));
  } catch (error) {
    await removeCgroup(dir);
    throw toError(error);
  }
  return dir;
}

/**
 * rmdir, not rm -r: a cgroup's files cannot be deleted, the directory can once it is empty. EBUSY
 * while a process is still inside (the kernel moves an exited one out a moment later): retried for 2 s.
 */
export async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY' || attempt >= 20)
        throw new Error(`Could not remove cgroup ${dir}: ${toError(error).message}`);
      await sleep(100);
    }
  }
}

function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}

/**
 * CPU seconds a process has used so far; undefined without /proc (not Linux). Its threads' time on a
 * CPU to the nanosecond (each thread's schedstat) where the kernel keeps it, else its user + system
 * time in clock ticks (10 ms each: 4% of a drain in which a process uses a quarter of a second).
 */
async function cpuSecondsOf(pid: number): Promise<number | undefined> {
  return (await scheduledSecondsOf(pid)) ?? (await tickSecondsOf(pid));
}

/** The sum of the process's threads' time on a CPU (the first field of each thread's schedstat). */
async function scheduledSecondsOf(pid: number): Promise<number | undefined> {
  try {
    const threads = await readdir(`/proc/${pid}/task`);
    let nanoseconds = 0;
    for (const thread of threads) {
      const schedstat = await readFile(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').catch(() => '');
      // A thread that has ended since the listing has nothing more to add.
      if (schedstat !== '') nanoseconds += Number(schedstat.split(' ')[0]);
    }
    return Number.isFinite(nanoseconds) && nanoseconds > 0 ? nanoseconds / 1e9 : undefined;
  } catch {
    return undefined;
  }
}

async function tickSecondsOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (in parentheses, possibly with spaces) start at field 3 (the
    // state); utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks / CLOCK_TICKS_PER_SECOND : undefined;
  } catch {
    return undefined;
  }
}

/** A count read from each process (CPU seconds, context switches), summed; undefined when any one cannot be read. */
async function totalOf(
  pids: number[],
  read: (pid: number) => Promise<number | undefined>,
): Promise<number | undefined> {
  let total = 0;
  for (const value of await Promise.all(pids.map(read))) {
    if (value === undefined) return undefined;
    total += value;
  }
  return total;
}

export interface CpuFigures {
  /** CPU seconds of the processes together per 1,000 units of work (requests, jobs); null without /proc. */
  secondsPer1000: number | null;
  /** CPUs each process used on average over the stretch (at most the quota, if any); null without /proc. */
  perProcess: number | null;
  /**
   * Times the processes' main threads went off a CPU (context switches, voluntary or not) per unit of
   * work: each is a wake-up that costs the kernel's work on top of the JavaScript; null without /proc.
   */
  switchesPerUnit: number | null;
}

/** Context switches of a process's main thread so far (its status: voluntary and not). */
async function switchesOf(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    let total = 0;
    for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm))
      total += Number(match[1]);
    return total;
  } catch {
    return undefined;
  }
}

/**
 * Starts counting the processes' CPU time. The function it returns reads it again and gives the
 * figures for the stretch since then, from the work done and the wall time it took: read just around
 * the measured work, so that neither the warmup nor the setup counts.
 */
export async function cpuMeter(
  pids: number[],
): Promise<(units: number, wallSeconds: number) => Promise<CpuFigures>> {
  const before = await totalOf(pids, cpuSecondsOf);
  const switchesBefore = await totalOf(pids, switchesOf);
  return async (units, wallSeconds) => {
    const after = await totalOf(pids, cpuSecondsOf);
    const switchesAfter = await totalOf(pids, switchesOf);
    const switchesPerUnit =
      switchesBefore === undefined || switchesAfter === undefined
        ? null
        : (switchesAfter - switchesBefore) / units;
    if (before === undefined || after === undefined)
      return { secondsPer1000: null, perProcess: null, switchesPerUnit };
    const seconds = after - before;
    return {
      secondsPer1000: (seconds / units) * 1000,
      perProcess: seconds / wallSeconds / pids.length,
      switchesPerUnit,
    };
  };
}

/**
 * How a quota-limited run labels itself, so that its figures are never taken for unlimited ones: the
 * stderr header, and the lines that go under the markdown table's machine line. `role` names the
 * confined processes ("API", "worker"); `unlimited` lists what shares the CPUs without a quota.
 */
export function quotaNotice(
  quota: CpuQuota,
  role: string,
  unlimited: string,
): { header: string; tableLines: string[] } {
  const label = `each ${role} process limited to ${quota.fraction.toFixed(2)} CPU (cgroup quota)`;
  return {
    header:
      `CPU-quota mode: ${label}: cgroup v${quota.controller.version}, ${quota.quotaUs} µs per ` +
      `${CPU_PERIOD_US} µs, one cgroup per process under ${quota.controller.parent}. ${unlimited} ` +
      'are not limited. Simulates one process per (fraction of a) core.\n',
    tableLines: [
      '',
      `**CPU-quota mode: ${label}**, simulating one process per core; ${unlimited} are not limited.`,
    ],
  };
}
