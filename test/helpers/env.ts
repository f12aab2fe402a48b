import net from 'node:net';

/** Where the integration suite finds PostgreSQL and Redis (the machine's own services by default). */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || defaultPort) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Whether a service's tests can run. Outside CI a missing service skips its tests with a message;
 * with CI=true it fails the run, because CI must run everything.
 */
export async function serviceAvailable(name: 'postgres' | 'redis'): Promise<boolean> {
  const ok =
    name === 'postgres' ? await reachable(TEST_POSTGRES_URL, 5432) : await reachable(TEST_REDIS_URL, 6379);
  if (!ok && IN_CI) throw new Error(`${name} is not reachable, and CI=true forbids skipping its tests.`);
  if (!ok) console.warn(`SKIPPED: ${name} tests (${name} is not reachable on this machine).`);
  return ok;
}

export type DatabaseKind = 'sqlite' | 'postgres';

/** The databases every integration test runs against: SQLite always, PostgreSQL when reachable. */
export const DATABASES: DatabaseKind[] = (await serviceAvailable('postgres'))
  ? ['sqlite', 'postgres']
  : ['sqlite'];

/**
 * The environment for a child process (CLI, server): ours minus what the test runner injects
 * (Vite sets BASE_URL=/ for its own use, which is not a URL the service accepts).
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const injected of ['BASE_URL', 'MODE', 'DEV', 'PROD', 'SSR']) delete env[injected];
  return { ...env, ...extra };
}
