import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/*
 * Image previews are rendered once per file and kept on this process's disk (DATA_DIR/thumbnails,
 * `<file id>.webp`). A preview is a copy of the client's image, so it goes when its file goes: the
 * deletion job of the file's stored object removes it, and the orphan sweep removes any whose file row
 * is gone (previews of files removed before the job named them, or by a crash).
 */

const DIRECTORY = 'thumbnails';
const PREVIEW = /^(file_[A-Za-z0-9]+)\.webp(\.part)?$/;

export function thumbnailDirectory(dataDir: string): string {
  return join(dataDir, DIRECTORY);
}

export function thumbnailPath(dataDir: string, fileId: string): string {
  return join(thumbnailDirectory(dataDir), `${fileId}.webp`);
}

/** Removes the previews of these files (and any rendering left half-written). */
export async function removeThumbnails(dataDir: string, fileIds: readonly string[]): Promise<void> {
  for (const fileId of fileIds) {
    if (!/^file_[A-Za-z0-9]+$/.test(fileId)) continue;
    const path = thumbnailPath(dataDir, fileId);
    await rm(path, { force: true });
    await rm(`${path}.part`, { force: true });
  }
}

/** The file ids that have a preview on this disk. */
export async function thumbnailFileIds(dataDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(thumbnailDirectory(dataDir));
  } catch {
    return [];
  }
  const ids = names.map((name) => PREVIEW.exec(name)?.[1]).filter((id): id is string => id !== undefined);
  return [...new Set(ids)];
}
