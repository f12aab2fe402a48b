import type SharpModule from 'sharp';

/** sharp's entry point: `sharp(input, options)` with its statics (`concurrency`, `cache`). */
export type Sharp = typeof SharpModule;
import { ApiError } from '../../http/errors.js';

/**
 * Decoding images is the costliest thing an anonymous client can ask for: a 1 MB PNG can declare
 * 16000×16000 pixels (1 GiB of RGBA once decoded). So an image is measured from its header, which
 * costs nothing, and refused above a pixel count before any decoding; and pixel work runs in a
 * bounded number of slots, one libvips thread each, so that uploads of bombs cannot take every
 * thread of the pool that file I/O shares (another tenant's upload waited 45 s) nor every byte of
 * memory (eight concurrent bombs peaked at 4.1 GiB).
 */

/** IMAGE_MAX_PIXELS' default: 100 million pixels (a 10,000 × 10,000 image; 400 MB decoded). */
export const DEFAULT_IMAGE_MAX_PIXELS = 100_000_000;
/** IMAGE_CONCURRENCY's default: images decoded at once, per process. */
export const DEFAULT_IMAGE_CONCURRENCY = 2;

export interface ImageLimits {
  maxPixels: number;
}

let slots = DEFAULT_IMAGE_CONCURRENCY;
let running = 0;
const waiting: Array<() => void> = [];

/**
 * Process-wide (libvips and the thread pool are): one libvips thread per image, a small operation
 * cache, and `concurrency` images in work at once.
 */
export function configureImageWork(concurrency: number): void {
  slots = Math.max(1, concurrency);
}

let loading: Promise<Sharp> | undefined;

/**
 * sharp (libvips, about 30 MB of resident memory) is loaded when the first image is worked on, not at
 * start: a process that never sees an image (a worker, an API serving only reads) never holds it. One
 * libvips thread per image and a small operation cache, process-wide.
 */
export function loadSharp(): Promise<Sharp> {
  loading ??= import('sharp').then(({ default: sharp }) => {
    sharp.concurrency(1);
    sharp.cache({ memory: 32, files: 0, items: 20 });
    return sharp;
  });
  return loading;
}

/** Runs pixel work when a slot is free; the rest wait in order. */
export async function withImageSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= slots) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** Refuses an image whose header declares more pixels than the limit (nothing is decoded). */
export function assertPixelBudget(
  width: number | undefined,
  height: number | undefined,
  limits: ImageLimits,
): void {
  if (width === undefined || height === undefined) return;
  if (width * height > limits.maxPixels) {
    throw new ApiError(
      'unprocessable',
      `The image is ${width}×${height} pixels: this server accepts images of at most ${limits.maxPixels.toLocaleString('en-US')} pixels. Export it smaller and upload it again.`,
    );
  }
}
