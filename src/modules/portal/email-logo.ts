import type { Kysely } from 'kysely';
import { loadSharp } from '../files/images.js';
import type { Database } from '../../db/schema.js';
import { accountLogo } from '../accounts/branding.js';

/**
 * The account's logo as mail clients can show it: a PNG (many show no SVG or WebP) at twice the
 * 40 px height the emails use, re-encoded from its pixels. Kept in memory by version: a logo only
 * changes with a new version, and every reminder of the account asks for the same one.
 */
const HEIGHT = 80;
const MAX_WIDTH = 400;
const MAX_INPUT_PIXELS = 25_000_000;
const kept = new Map<string, Buffer>();
const KEEP_AT_MOST = 200;

export async function emailLogoPng(
  db: Kysely<Database>,
  accountId: string,
  version: string | undefined,
): Promise<Buffer | undefined> {
  const logo = await accountLogo(db, accountId);
  if (!logo || logo.version !== version) return undefined;
  const key = `${accountId}:${logo.version}`;
  const hit = kept.get(key);
  if (hit) return hit;
  let png: Buffer;
  try {
    png = await (
      await loadSharp()
    )(logo.bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'none' })
      .resize({ height: HEIGHT, width: MAX_WIDTH, fit: 'inside', withoutEnlargement: false })
      .png()
      .toBuffer();
  } catch {
    return undefined;
  }
  if (kept.size >= KEEP_AT_MOST) kept.delete(kept.keys().next().value ?? '');
  kept.set(key, png);
  return png;
}
