import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectFile } from './inspect.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/images');
let dir: string;
let counter = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'inspect-test-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function fileOf(content: Buffer | string): Promise<string> {
  const path = join(dir, `f${counter++}`);
  await writeFile(path, content);
  return path;
}

/** An RGBA canvas, opaque red, optionally with a transparent square in the middle. */
function canvas(width: number, height: number, hole: boolean) {
  const pixels = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      const inHole = hole && Math.abs(x - width / 2) < width / 4 && Math.abs(y - height / 2) < height / 4;
      pixels.set([200, 30, 30, inHole ? 0 : 255], i);
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 4 } });
}

const opaqueRgb = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 10, g: 120, b: 200 } } });

describe('inspectFile: raster images by content', () => {
  const cases: {
    name: string;
    make: () => Promise<Buffer>;
    format: string;
    contentType: string;
    width: number;
    height: number;
    transparent: boolean;
  }[] = [
    {
      name: 'PNG with transparent pixels',
      make: () => canvas(1200, 800, true).png().toBuffer(),
      format: 'png',
      contentType: 'image/png',
      width: 1200,
      height: 800,
      transparent: true,
    },
    {
      name: 'PNG with an alpha channel but every pixel opaque',
      make: () => canvas(640, 480, false).png().toBuffer(),
      format: 'png',
      contentType: 'image/png',
      width: 640,
      height: 480,
      transparent: false,
    },
    {
      name: 'PNG without alpha',
      make: () => opaqueRgb(37, 1001).png().toBuffer(),
      format: 'png',
      contentType: 'image/png',
      width: 37,
      height: 1001,
      transparent: false,
    },
    {
      name: 'palette PNG with a transparent colour',
      make: () => canvas(64, 64, true).png({ palette: true }).toBuffer(),
      format: 'png',
      contentType: 'image/png',
      width: 64,
      height: 64,
      transparent: true,
    },
    {
      name: 'JPEG',
      make: () => opaqueRgb(2000, 1000).jpeg().toBuffer(),
      format: 'jpg',
      contentType: 'image/jpeg',
      width: 2000,
      height: 1000,
      transparent: false,
    },
    {
      name: 'JPEG rotated by EXIF orientation 6 (reported as displayed)',
      make: () => opaqueRgb(300, 100).jpeg().withMetadata({ orientation: 6 }).toBuffer(),
      format: 'jpg',
      contentType: 'image/jpeg',
      width: 100,
      height: 300,
      transparent: false,
    },
    {
      name: 'WebP with transparent pixels',
      make: () => canvas(512, 256, true).webp({ lossless: true }).toBuffer(),
      format: 'webp',
      contentType: 'image/webp',
      width: 512,
      height: 256,
      transparent: true,
    },
    {
      name: 'WebP opaque',
      make: () => opaqueRgb(1500, 10).webp().toBuffer(),
      format: 'webp',
      contentType: 'image/webp',
      width: 1500,
      height: 10,
      transparent: false,
    },
    {
      name: 'GIF with a transparent colour',
      make: () => canvas(100, 50, true).gif().toBuffer(),
      format: 'gif',
      contentType: 'image/gif',
      width: 100,
      height: 50,
      transparent: true,
    },
    {
      name: 'GIF opaque',
      make: () => opaqueRgb(120, 90).gif().toBuffer(),
      format: 'gif',
      contentType: 'image/gif',
      width: 120,
      height: 90,
      transparent: false,
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      // A misleading name must not matter: detection is by content.
      const facts = await inspectFile(await fileOf(await c.make()), 'upload.txt');
      expect(facts).toEqual({
        format: c.format,
        contentType: c.contentType,
        bytes: expect.any(Number) as number,
        width: c.width,
        height: c.height,
        transparent: c.transparent,
      });
    });
  }

  it('reports the frame size of an animated GIF', async () => {
    const frames = await Promise.all([
      opaqueRgb(80, 60).png().toBuffer(),
      canvas(80, 60, true).png().toBuffer(),
    ]);
    const gif = await sharp(frames, { join: { animated: true } })
      .gif()
      .toBuffer();
    const facts = await inspectFile(await fileOf(gif), 'anim.gif');
    expect(facts).toMatchObject({ format: 'gif', width: 80, height: 60 });
  });

  it('counts bytes exactly', async () => {
    const png = await opaqueRgb(10, 10).png().toBuffer();
    expect((await inspectFile(await fileOf(png), 'a.png')).bytes).toBe(png.length);
  });
});

describe('inspectFile: HEIC (header only; no HEVC decoder in sharp)', () => {
  const heic = async (name: string) => {
    const path = join(dir, `${counter++}-${name}`);
    await copyFile(join(FIXTURES, name), path);
    return inspectFile(path, 'photo.jpg');
  };

  it('an image with an alpha plane is transparent', async () => {
    expect(await heic('logo-alpha-1200x800.heic')).toEqual({
      format: 'heic',
      contentType: 'image/heic',
      bytes: 11546,
      width: 1200,
      height: 800,
      transparent: true,
    });
  });

  it('an image without one is opaque', async () => {
    expect(await heic('photo-opaque-1200x800.heic')).toMatchObject({
      format: 'heic',
      width: 1200,
      height: 800,
      transparent: false,
    });
    expect(await heic('small-opaque-64x64.heic')).toMatchObject({
      format: 'heic',
      bytes: 784,
      width: 64,
      height: 64,
      transparent: false,
    });
  });
});

describe('inspectFile: documents and text', () => {
  const PDF = Buffer.from(
    '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n' +
      'trailer<</Root 1 0 R>>\n%%EOF\n',
  );

  it('detects a PDF whatever it is called', async () => {
    expect(await inspectFile(await fileOf(PDF), 'logo.png')).toEqual({
      format: 'pdf',
      contentType: 'application/pdf',
      bytes: PDF.length,
    });
  });

  it('calls UTF-8 text csv only when the name says .csv', async () => {
    const csv = 'name,city\nZoë,Zürich\n';
    expect(await inspectFile(await fileOf(csv), 'Clients.CSV')).toEqual({
      format: 'csv',
      contentType: 'text/csv',
      bytes: Buffer.byteLength(csv),
    });
    expect(await inspectFile(await fileOf(csv), 'clients.txt')).toMatchObject({
      format: 'txt',
      contentType: 'text/plain',
    });
    expect(await inspectFile(await fileOf('just some notes\r\n\twith tabs'), 'notes')).toMatchObject({
      format: 'txt',
    });
  });

  it('does not call binary or invalid UTF-8 text, even when named .csv or .txt', async () => {
    const invalidUtf8 = Buffer.from([0x61, 0x2c, 0x62, 0x0a, 0xc3, 0x28, 0x0a]);
    expect(await inspectFile(await fileOf(invalidUtf8), 'data.csv')).toEqual({
      format: undefined,
      contentType: 'application/octet-stream',
      bytes: 7,
    });
    const withNul = Buffer.from('a,b\n\u0000\u0001\u0002,c\n');
    expect((await inspectFile(await fileOf(withNul), 'data.csv')).format).toBeUndefined();
    expect((await inspectFile(await fileOf(Buffer.alloc(0)), 'empty.txt')).format).toBeUndefined();
  });

  it('recognises a PNG named .csv as PNG', async () => {
    const png = await opaqueRgb(5, 5).png().toBuffer();
    expect((await inspectFile(await fileOf(png), 'table.csv')).format).toBe('png');
  });
});

describe('inspectFile: SVG', () => {
  const svg = (attributes: string, inner = '<circle cx="5" cy="5" r="4" fill="#e00"/>') =>
    `<svg xmlns="http://www.w3.org/2000/svg" ${attributes}>${inner}</svg>`;
  const inspectSvg = async (text: string, name = 'logo.svg') => inspectFile(await fileOf(text), name);

  it('recognises SVG by content (with XML declaration, comments, BOM), whatever the name', async () => {
    const text = `\uFEFF<?xml version="1.0" encoding="UTF-8"?>\n<!-- made by hand -->\n${svg('width="300" height="150"')}`;
    expect(await inspectSvg(text, 'logo.png')).toEqual({
      format: 'svg',
      contentType: 'image/svg+xml',
      bytes: Buffer.byteLength(text),
      width: 300,
      height: 150,
      transparent: true,
    });
  });

  it('takes the size from width/height, units, or the viewBox', async () => {
    expect(await inspectSvg(svg('viewBox="0 0 1200 400"'))).toMatchObject({ width: 1200, height: 400 });
    expect(await inspectSvg(svg('width="600" viewBox="0 0 1200 400"'))).toMatchObject({
      width: 600,
      height: 200,
    });
    expect(await inspectSvg(svg('width="100%" height="100%" viewBox="0,0,64,32"'))).toMatchObject({
      width: 64,
      height: 32,
    });
    expect(await inspectSvg(svg('width="1in" height="72pt"'))).toMatchObject({ width: 96, height: 96 });
    expect(await inspectSvg(svg(''))).toMatchObject({ format: 'svg', width: undefined, height: undefined });
  });

  it('is transparent unless it paints a full-size background', async () => {
    const box = 'width="200" height="100" viewBox="0 0 200 100"';
    const opaque = [
      svg(box, '<rect width="200" height="100" fill="#fff"/><circle cx="5" cy="5" r="4"/>'),
      svg(box, '<rect width="100%" height="100%" style="fill: white"/>'),
      svg(box, '<rect x="0" y="0" width="200" height="100"/>'),
      svg(box, '<g fill="#123"><rect width="200" height="100"/></g>'),
      svg(box + ' style="background-color: #fafafa"'),
      svg('viewBox="-50 -50 100 100"', '<rect x="-50" y="-50" width="100" height="100" fill="red"/>'),
    ];
    for (const text of opaque) expect((await inspectSvg(text)).transparent, text).toBe(false);
    const transparent = [
      svg(box),
      svg(box, '<rect width="200" height="100" fill="none" stroke="#000"/>'),
      svg(box, '<rect width="150" height="100" fill="#fff"/>'),
      svg(box, '<rect x="10" width="200" height="100" fill="#fff"/>'),
      svg(box, '<rect width="200" height="100" fill="#fff" opacity="0.5"/>'),
      svg(box, '<rect width="200" height="100" fill="rgba(255,255,255,0)"/>'),
      svg(box, '<rect width="200" height="100" fill="#fff" transform="scale(0.5)"/>'),
      svg(box, '<g fill="none"><rect width="200" height="100"/></g>'),
      svg(box + ' style="background: transparent"'),
    ];
    for (const text of transparent) expect((await inspectSvg(text)).transparent, text).toBe(true);
  });

  it('plain XML that is not SVG is text, not an image', async () => {
    expect(await inspectSvg('<?xml version="1.0"?><note><to>x</to></note>', 'note.xml')).toMatchObject({
      format: 'txt',
      contentType: 'text/plain',
    });
  });
});
