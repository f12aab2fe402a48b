import sharp from 'sharp';

/** A PNG of the given size; transparent around an opaque disc when `transparent`, else a solid fill. */
export async function png(
  width: number,
  height = Math.round(width / 2),
  transparent = false,
): Promise<Buffer> {
  const base = sharp({
    create: {
      width,
      height,
      channels: 4,
      background: transparent ? { r: 0, g: 0, b: 0, alpha: 0 } : { r: 30, g: 90, b: 200, alpha: 1 },
    },
  });
  if (!transparent) return base.png().toBuffer();
  const r = Math.floor(Math.min(width, height) / 3);
  const disc = Buffer.from(
    `<svg width="${width}" height="${height}"><circle cx="${width / 2}" cy="${height / 2}" r="${r}" fill="#c33"/></svg>`,
  );
  return base
    .composite([{ input: disc }])
    .png()
    .toBuffer();
}

export async function jpeg(width: number, height = Math.round(width * 0.75)): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 150, b: 90 } } })
    .jpeg()
    .toBuffer();
}
