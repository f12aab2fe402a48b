import { loadSharp } from '../files/images.js';
import type { Format } from '../../domain/items.js';

/** A small real file of `format` (images of the given width, transparent when asked), for simulate. */
export async function syntheticFile(
  format: Format,
  width: number,
  transparent: boolean,
): Promise<{ bytes: Buffer; name: string; contentType: string }> {
  const height = Math.max(1, Math.round(width / 2));
  const sharp = await loadSharp();
  const raster = () =>
    sharp({
      create: {
        width,
        height,
        channels: 4,
        background: transparent ? { r: 0, g: 0, b: 0, alpha: 0 } : { r: 40, g: 120, b: 200, alpha: 1 },
      },
    }).composite([
      {
        input: Buffer.from(
          `<svg width="${width}" height="${height}"><rect x="${width / 4}" y="${height / 4}" width="${width / 2}" height="${height / 2}" fill="#e63"/></svg>`,
        ),
      },
    ]);
  switch (format) {
    case 'png':
      return { bytes: await raster().png().toBuffer(), name: 'synthetic.png', contentType: 'image/png' };
    case 'webp':
      return {
        bytes: await raster().webp({ lossless: true }).toBuffer(),
        name: 'synthetic.webp',
        contentType: 'image/webp',
      };
    case 'jpg':
      return {
        bytes: await raster().flatten({ background: '#ffffff' }).jpeg().toBuffer(),
        name: 'synthetic.jpg',
        contentType: 'image/jpeg',
      };
    case 'gif':
      return { bytes: await raster().gif().toBuffer(), name: 'synthetic.gif', contentType: 'image/gif' };
    case 'svg':
      return {
        bytes: Buffer.from(
          `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><circle cx="${width / 2}" cy="${height / 2}" r="${height / 3}" fill="#e63"/></svg>`,
        ),
        name: 'synthetic.svg',
        contentType: 'image/svg+xml',
      };
    case 'txt':
      return {
        bytes: Buffer.from('Synthetic file from test mode.\n'),
        name: 'synthetic.txt',
        contentType: 'text/plain',
      };
    case 'csv':
      return {
        bytes: Buffer.from('name,value\nexample,1\n'),
        name: 'synthetic.csv',
        contentType: 'text/csv',
      };
    default:
      return { bytes: minimalPdf(), name: 'synthetic.pdf', contentType: 'application/pdf' };
  }
}

function minimalPdf(): Buffer {
  return Buffer.from(
    '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
      '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
  );
}
