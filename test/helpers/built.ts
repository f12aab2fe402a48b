import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { childEnv } from './env.js';

/**
 * The service as production runs it: `npm run build`'s output, started through the `intake` bin.
 * Built inside the test into a folder of its own under .tmp/ (git-ignored), so a test never depends
 * on a build made by hand; the folder sits in the checkout, so node_modules and web/ are found as
 * from dist/.
 */
export interface Build {
  /** The copy of bin/intake.js that runs this build's dist/. */
  bin: string;
  remove(): void;
}

const ROOT = resolve(import.meta.dirname, '..', '..');

export function buildService(): Build {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.tmp', 'build-'));
  const built = spawnSync(process.execPath, ['scripts/build.js', '--out', join(dir, 'dist')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`build failed: ${built.stdout}${built.stderr}`);
  mkdirSync(join(dir, 'bin'));
  copyFileSync(join(ROOT, 'bin', 'intake.js'), join(dir, 'bin', 'intake.js'));
  return {
    bin: join(dir, 'bin', 'intake.js'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface BuiltProcess {
  pid: number;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** Starts `node <bin> serve` and resolves once it printed its address and its worker line. */
export async function startBuilt(build: Build, env: Record<string, string>): Promise<BuiltProcess> {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(process.execPath, [build.bin, 'serve'], {
    env: childEnv({ PORT: '0', LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start: ${output}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1] && output.includes('Background worker:')) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before it was ready: ${output}`));
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    pid: child.pid ?? 0,
    url,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a command of the built CLI to its end; rejects on a non-zero exit. Returns stdout. */
export function runBuilt(build: Build, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [build.bin, ...args], {
      env: childEnv({ LOG_LEVEL: 'silent', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${args.join(' ')} exited with ${code}: ${stderr}`)),
    );
  });
}
