/**
 * The server under attack, in its own process (so the bench's clock is not the loop it measures):
 * starts the service of the checkout at BENCH_ROOT (default this one) on a free port with a fresh
 * DATA_DIR, creates an agency account and prints `{url, key, pid}` as one JSON line.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(process.env.BENCH_ROOT ?? '.');
const load = async <T>(path: string) => (await import(pathToFileURL(join(root, path)).href)) as T;

interface ServerModule {
  startServer: (config: unknown) => Promise<{ url: string; services: { db: { kysely: unknown } } }>;
}
interface ConfigModule {
  loadConfig: (env: Record<string, string>) => unknown;
}
interface AccountsModule {
  createAccount: (
    db: unknown,
    input: { email: string; plan: string },
    at: string,
  ) => Promise<{ live_key: string }>;
}

const { loadConfig } = await load<ConfigModule>('src/config.ts');
const { startServer } = await load<ServerModule>('src/server.ts');
const { createAccount } = await load<AccountsModule>('src/modules/accounts/accounts.service.ts');
const dataDir = await mkdtemp(join(tmpdir(), 'intake-attack-'));
const server = await startServer(loadConfig({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
const account = await createAccount(
  server.services.db.kysely,
  { email: 'bench@example.com', plan: 'agency' },
  new Date().toISOString(),
);
process.stdout.write(`${JSON.stringify({ url: server.url, key: account.live_key, pid: process.pid })}\n`);
