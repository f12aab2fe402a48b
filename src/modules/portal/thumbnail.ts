import type { Readable } from 'node:stream';
import sharp from 'sharp';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { canonicalIntakeId, findIntakeById, findItemFile } from '../intakes/intakes.service.js';

const PREVIEWABLE = /^image\/(png|jpeg|webp|gif|svg\+xml)$/;
const SIZE = 112;
/** Larger images are not decoded for a preview (a decompression bomb costs nothing here). */
const MAX_INPUT_PIXELS = 100_000_000;
const MAX_INPUT_BYTES = 50 * 1024 * 1024;

async function bufferOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A small WebP preview of an uploaded image, re-encoded from its pixels: the client sees what they
 * sent, and the portal never serves an upload's own bytes (an SVG, say) from its origin.
 */
export async function thumbnailOf(
  services: AppServices,
  intakeId: string,
  key: string,
  fileId: string,
): Promise<Buffer> {
  const db = services.db.kysely;
  const intake = await findIntakeById(db, intakeId);
  if (!intake || intake.status === 'draft' || intake.purged_at)
    throw new ApiError('not_found', 'No such file.');
  const file = await findItemFile(db, canonicalIntakeId(intakeId), key, fileId);
  if (!file || !PREVIEWABLE.test(file.content_type) || Number(file.size) > MAX_INPUT_BYTES)
    throw new ApiError('not_found', 'No preview for this file.');
  const input = await bufferOf(await services.storage.get(file.storage_key));
  try {
    return await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'none' })
      .rotate()
      .resize(SIZE, SIZE, { fit: 'cover' })
      .webp({ quality: 70 })
      .toBuffer();
  } catch {
    throw new ApiError('not_found', 'No preview for this file.');
  }
}
