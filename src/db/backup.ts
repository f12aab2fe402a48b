import { existsSync } from 'node:fs';
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { create as createTar, extract as extractTar } from 'tar';
import { z } from 'zod';

/**
 * Backups of the embedded deployment: the SQLite database, the local files directory and the
 * generated secret key of DATA_DIR, in one gzipped tar archive. The database is copied online with
 * SQLite's backup API (better-sqlite3), which reads a consistent snapshot while the service goes on
 * writing (WAL: writers are never blocked); the files are copied after it, so every file the snapshot
 * refers to is there (stored files are never changed, only added and deleted after their rows).
 * PostgreSQL deployments back up with pg_dump and the bucket with the storage's own tools.
 */

const DATABASE_FILE = 'intake.sqlite';
const SECRET_FILE = 'secret.key';
const FILES_DIR = 'files';
const MANIFEST_FILE = 'backup.json';

/** What backup.json in the archive says. */
export const BackupManifest = z.object({
  format: z.literal(1),
  created_at: z.string(),
  database: z.literal(DATABASE_FILE),
  /** The last migration applied to the copied database. */
  migration: z.string().nullable(),
  files: z.number().int().min(0),
  secret_key: z.boolean(),
});
export type BackupManifest = z.infer<typeof BackupManifest>;

export interface BackupSummary extends BackupManifest {
  archive: string;
  bytes: number;
  database_bytes: number;
}

export class BackupError extends Error {}

async function countFiles(dir: string): Promise<number> {
  if (!existsSync(dir)) return 0;
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).length;
}

function checkIntegrity(file: string): { migration: string | null } {
  const db = new SQLite(file, { readonly: true, fileMustExist: true });
  try {
    const result = db.pragma('integrity_check', { simple: true });
    if (result !== 'ok')
      throw new BackupError(`The database copy fails its integrity check: ${String(result)}`);
    const last = db
      .prepare<[], { name: string }>('select name from kysely_migration order by name desc limit 1')
      .get();
    return { migration: last?.name ?? null };
  } finally {
    db.close();
  }
}

/** Takes a consistent online copy of DATA_DIR's database, files and secret key into `out` (.tar.gz). */
export async function backupDataDir(
  dataDir: string,
  out: string,
  now: Date = new Date(),
): Promise<BackupSummary> {
  const source = join(dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new BackupError(`No database at ${source}: is DATA_DIR right?`);
  const archive = resolve(out);
  await mkdir(dirname(archive), { recursive: true });
  const staging = await mkdtemp(join(dirname(archive), '.intake-backup-'));
  try {
    const copy = join(staging, DATABASE_FILE);
    const db = new SQLite(source, { readonly: true, fileMustExist: true });
    try {
      // The first step copies a few pages, the next all the rest: a write by the service between two
      // steps restarts the copy, so few steps finish under a steady stream of writes.
      await db.backup(copy, { progress: ({ totalPages }) => totalPages + 1 });
    } finally {
      db.close();
    }
    const { migration } = checkIntegrity(copy);
    const entries = [MANIFEST_FILE, DATABASE_FILE];
    const secret = existsSync(join(dataDir, SECRET_FILE));
    if (secret) {
      await copyFile(join(dataDir, SECRET_FILE), join(staging, SECRET_FILE));
      entries.push(SECRET_FILE);
    }
    const filesDir = join(dataDir, FILES_DIR);
    if (existsSync(filesDir)) {
      // Packed through a link (followed), not copied: the files are read once, into the archive.
      await symlink(filesDir, join(staging, FILES_DIR), 'dir');
      entries.push(FILES_DIR);
    }
    const manifest: BackupManifest = {
      format: 1,
      created_at: now.toISOString(),
      database: DATABASE_FILE,
      migration,
      files: await countFiles(filesDir),
      secret_key: secret,
    };
    await writeFile(join(staging, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
    const partial = `${archive}.partial`;
    await createTar({ gzip: true, file: partial, cwd: staging, portable: true, follow: true }, entries);
    // The archive holds every client's data and the secret key: readable by its owner only.
    await chmod(partial, 0o600);
    await rename(partial, archive);
    return {
      ...manifest,
      archive,
      bytes: (await stat(archive)).size,
      database_bytes: (await stat(copy)).size,
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

export interface RestoreSummary extends BackupManifest {
  data_dir: string;
}

/** Whether a directory is missing or holds nothing. */
async function isEmptyDir(dir: string): Promise<boolean> {
  if (!existsSync(dir)) return true;
  return (await readdir(dir)).length === 0;
}

/**
 * Unpacks a backup into an empty DATA_DIR and checks the database's integrity. Refuses a DATA_DIR
 * that holds anything, so a restore never mixes with (or overwrites) live data.
 */
export async function restoreDataDir(from: string, dataDir: string): Promise<RestoreSummary> {
  const archive = resolve(from);
  if (!existsSync(archive)) throw new BackupError(`No backup at ${archive}.`);
  if (!(await isEmptyDir(dataDir)))
    throw new BackupError(`DATA_DIR ${dataDir} is not empty: restore into an empty directory.`);
  await mkdir(dataDir, { recursive: true });
  const allowed = new Set([MANIFEST_FILE, DATABASE_FILE, SECRET_FILE, FILES_DIR]);
  await extractTar({
    file: archive,
    cwd: dataDir,
    strict: true,
    filter: (path) => allowed.has(path.replace(/^\.\//, '').split('/')[0] ?? ''),
  });
  const manifestPath = join(dataDir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw new BackupError(`${archive} is not a backup of this service.`);
  const manifest = BackupManifest.parse(JSON.parse(await readFile(manifestPath, 'utf8')));
  await rm(manifestPath);
  checkIntegrity(join(dataDir, DATABASE_FILE));
  const files = await countFiles(join(dataDir, FILES_DIR));
  if (files !== manifest.files)
    throw new BackupError(`The backup lists ${manifest.files} files but ${files} were restored.`);
  return { ...manifest, data_dir: resolve(dataDir) };
}
