import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Streams `body` into a file made for it at `path`, never over one already there (`wx`). When the write
 * fails the partial file is removed, once the stream has closed it: the file opens asynchronously, and a
 * failure before it had opened (a body refused at its first chunk) would otherwise remove it first and
 * see it created after. A file that was there before (EEXIST) is not this write's, and stays.
 */
export async function writeNewFile(
  body: Readable,
  path: string,
  options: { mode?: number; highWaterMark?: number } = {},
): Promise<void> {
  const file = createWriteStream(path, { flags: 'wx', ...options });
  try {
    await pipeline(body, file);
  } catch (error) {
    if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') await rm(path, { force: true });
    throw error;
  }
}
