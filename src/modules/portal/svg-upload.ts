import { readFile, writeFile } from 'node:fs/promises';
import type { FileFacts } from '../../domain/values.js';
import { ApiError } from '../../http/errors.js';
import { sanitizeSvg } from '../files/svg.js';

/** SVG is accepted only sanitized: the temp file is rewritten with scripts and external references removed. */
export async function sanitizeUploadedSvg(path: string, facts: FileFacts): Promise<FileFacts> {
  const result = await sanitizeSvg(await readFile(path, 'utf8'));
  if (!result.ok) throw new ApiError('unprocessable', `The SVG was refused: ${result.reason}.`);
  await writeFile(path, result.svg);
  return { ...facts, bytes: Buffer.byteLength(result.svg) };
}
