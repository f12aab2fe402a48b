import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { inject } from 'vitest';
import { childEnv } from './env.js';

/**
 * `node <the intake bin of this run's build>`: the compiled program, in one process, as production
 * runs it (the build is made once per test run by test/global-setup.ts). Signals reach the service
 * itself: a SIGKILL kills it, mid-whatever.
 */
export function intakeCommand(...args: string[]): string[] {
  return [inject('builtBin'), ...args];
}

/** A service process started through the CLI (`api`, `worker`, `serve`), as an operator would. */
export interface CliProcess {
  role: string;
  pid: number;
  /** The API's address (api and serve); empty for a worker. */
  url: string;
  output(): string;
  exited: Promise<number | null>;
  /** SIGKILL: the process dies at once, mid-whatever. */
  kill(): Promise<void>;
  /** SIGTERM, then waits for the exit (SIGKILL after timeoutMs). */
  stop(timeoutMs?: number): Promise<void>;
}

const READY: Record<string, RegExp> = {
  api: /listening on (http:\/\/\S+)/,
  serve: /listening on (http:\/\/\S+)/,
  worker: /Intake worker running/,
};

/**
 * Spawns `node <intake bin> <role>` directly (not through npm: signals reach the service itself) and
 * resolves once it printed its ready line.
 */
export async function startCliProcess(
  role: 'api' | 'worker' | 'serve',
  env: Record<string, string>,
  timeoutMs = 90_000,
): Promise<CliProcess> {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(process.execPath, intakeCommand(role), {
    env: childEnv({ PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${role} did not start: ${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = READY[role]?.exec(output);
      if (match && (role === 'worker' || output.includes('Background worker:'))) {
        clearTimeout(timer);
        resolve(match[1] ?? '');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${role} exited with ${code} before it was ready: ${output}`));
    });
  });
  let url: string;
  try {
    url = await ready;
  } catch (error) {
    // Never leave a half-started service behind.
    child.kill('SIGKILL');
    throw error;
  }
  const pid = child.pid ?? 0;
  return {
    role,
    pid,
    url,
    output: () => output,
    exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop(timeout = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a CLI command to its end; rejects on a non-zero exit. Returns stdout. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, intakeCommand(...args), {
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`cli ${args.join(' ')} exited with ${code}: ${stderr}`));
    });
  });
}
