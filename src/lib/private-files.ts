import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';

/**
 * DATA_DIR holds the SQLite database, uploaded files and the generated secret key: only the service's
 * own user may list or read it (0700), whatever the umask, and an existing directory is tightened too.
 */
export function ensurePrivateDirectory(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  tighten(path, 0o700);
}

/**
 * A file only the service's user may read and write (0600), created empty if missing. SQLite gives its
 * `-wal` and `-shm` files the database file's permissions, so the database stays private as a whole.
 */
export function ensurePrivateFile(path: string): void {
  closeSync(openSync(path, 'a', 0o600));
  tighten(path, 0o600);
}

function tighten(path: string, mode: number): void {
  try {
    chmodSync(path, mode);
  } catch (error) {
    // A directory or file of another user (a mounted volume): nothing this process may change.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
  }
}
