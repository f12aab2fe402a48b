import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { loadSharp } from '../files/images.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { withImageSlot } from '../files/images.js';
import { thumbnailDirectory, thumbnailPath } from '../files/thumbnails.js';
import { canonicalIntakeId, findIntakeById, findItemFile } from '../intakes/intakes.service.js';

const PREVIEWABLE = /^image\/(png|jpeg|webp|gif|svg\+xml)$/;
const SIZE = 112;
const MAX_INPUT_BYTES = 50 * 1024 * 1024;
/** A file whose preview failed: remembered, so a file that cannot be previewed is not decoded again. */
const NO_PREVIEW = Buffer.alloc(0);

/** Renders under way, by file: concurrent requests for one preview share one rendering. */
const rendering = new Map<string, Promise<Buffer>>();

async function bufferOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function cached(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch {
    return undefined;
  }
}

async function render(services: AppServices, storageKey: string): Promise<Buffer> {
  const input = await bufferOf(await services.storage.get(storageKey));
  try {
    const sharp = await loadSharp();
    return await withImageSlot(() =>
      sharp(input, { limitInputPixels: services.config.images.maxPixels, failOn: 'none' })
        .rotate()
        .resize(SIZE, SIZE, { fit: 'cover' })
        .webp({ quality: 70 })
        .toBuffer(),
    );
  } catch {
    return NO_PREVIEW;
  }
}

/**
 * A small WebP preview of an uploaded image, re-encoded from its pixels: the client sees what they
 * sent, and the portal never serves an upload's own bytes (an SVG, say) from its origin. Rendered
 * once per file and kept under DATA_DIR/thumbnails (files never change; a removed file's preview goes
 * with its stored object, see files/thumbnails.ts), decoded in an image slot, and rate-limited per address.
 */
export async function thumbnailOf(
  services: AppServices,
  intakeId: string,
  key: string,
  fileId: string,
  requester: string,
): Promise<Buffer> {
  const db = services.db.kysely;
  const intake = await findIntakeById(db, intakeId);
  if (!intake || intake.status === 'draft' || intake.purged_at)
    throw new ApiError('not_found', 'No such file.');
  const file = await findItemFile(db, canonicalIntakeId(intakeId), key, fileId);
  if (!file || !PREVIEWABLE.test(file.content_type) || Number(file.size) > MAX_INPUT_BYTES)
    throw new ApiError('not_found', 'No preview for this file.');
  const path = thumbnailPath(services.config.dataDir, file.id);
  let bytes = (await cached(path)) ?? (await rendering.get(file.id));
  if (!bytes) {
    // Renders (not cached answers) per address: a preview is rendered once per file, so this bounds
    // what one address can make the server decode.
    const limit = services.config.images.thumbnailRendersPerHour;
    const decision = await services.limiter.hit(
      `thumbnail-ip:${requester}`,
      limit,
      services.clock.now().getTime(),
    );
    if (!decision.allowed) {
      throw new ApiError(
        'rate_limited',
        `Too many previews from your network address: at most ${limit} per hour. Retry in ${decision.retryAfterSeconds} seconds.`,
        {},
        { 'Retry-After': String(decision.retryAfterSeconds) },
      );
    }
    const work = (async () => {
      const rendered = await render(services, file.storage_key);
      await mkdir(thumbnailDirectory(services.config.dataDir), { recursive: true });
      await writeFile(`${path}.part`, rendered);
      await rename(`${path}.part`, path);
      return rendered;
    })();
    rendering.set(file.id, work);
    try {
      bytes = await work;
    } finally {
      rendering.delete(file.id);
    }
  }
  if (bytes.length === 0) throw new ApiError('not_found', 'No preview for this file.');
  return bytes;
}
