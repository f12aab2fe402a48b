import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Element } from '@xmldom/xmldom';
import { fileTypeFromFile } from 'file-type';
import { imageSizeFromFile } from 'image-size/fromFile';
import type { Metadata } from 'sharp';
import { loadSharp } from './images.js';
import { FORMATS, type Format } from '../../domain/items.js';
import type { FileFacts } from '../../domain/values.js';
import { assertPixelBudget, DEFAULT_IMAGE_MAX_PIXELS, withImageSlot, type ImageLimits } from './images.js';
import { parseSvg, SVG_NS } from './svg.js';

/** Content type (as detection reports it) → canonical format. APNG is a PNG to every consumer. */
const FORMAT_BY_MIME = new Map<string, Format>([
  ...Object.entries(FORMATS).flatMap(([format, mimes]) =>
    mimes.map((mime): [string, Format] => [mime, format as Format]),
  ),
  ['image/apng', 'png'],
]);

const RASTER: readonly Format[] = ['png', 'jpg', 'webp', 'gif'];
/** SVG text beyond this is still recognised as SVG, but not parsed for its size. */
const SVG_PARSE_LIMIT_CHARS = 8 * 1024 * 1024;

/**
 * What a file is, by its content only (magic bytes, then text sniffing); the declared name only
 * decides between csv and txt for text. Images also get their size and transparency; an image
 * larger than `limits.maxPixels` is refused (422) from its header, before any pixel is decoded.
 */
export async function inspectFile(
  path: string,
  declaredName: string,
  limits: ImageLimits = { maxPixels: DEFAULT_IMAGE_MAX_PIXELS },
): Promise<FileFacts> {
  const { size: bytes } = await stat(path);
  const detected = await fileTypeFromFile(path);
  // file-type reports XML (which an SVG may start as) but never SVG or plain text itself.
  if (detected && detected.mime !== 'application/xml') {
    const format = FORMAT_BY_MIME.get(detected.mime);
    const contentType = format ? FORMATS[format][0] : detected.mime;
    if (format === 'heic') {
      const facts = await heicFacts(path);
      assertPixelBudget(facts.width, facts.height, limits);
      return { format, contentType, bytes, ...facts };
    }
    if (format && RASTER.includes(format))
      return { format, contentType, bytes, ...(await rasterFacts(path, limits)) };
    return { format, contentType, bytes };
  }
  const text = bytes > 0 ? await readUtf8Text(path) : undefined;
  if (text?.isText) {
    if (text.content !== undefined ? looksLikeSvg(text.content) : text.svgStart) {
      const facts = svgFacts(text.content);
      assertPixelBudget(facts.width, facts.height, limits);
      return { format: 'svg', contentType: 'image/svg+xml', bytes, ...facts };
    }
    if (/\.csv$/i.test(declaredName.trim())) return { format: 'csv', contentType: 'text/csv', bytes };
    return { format: 'txt', contentType: 'text/plain', bytes };
  }
  return { format: undefined, contentType: detected?.mime ?? 'application/octet-stream', bytes };
}

type ImageFacts = Pick<FileFacts, 'width' | 'height' | 'transparent'>;

/**
 * Raster images: size as displayed (EXIF orientation applied; one frame of an animation), and
 * transparent only when an alpha channel exists AND some pixel is less than fully opaque
 * (an RGBA export of an opaque photo is not transparent). Animations: the first frame decides.
 */
async function rasterFacts(path: string, limits: ImageLimits): Promise<ImageFacts> {
  let meta: Metadata;
  try {
    // The header only: nothing is decoded yet.
    meta = await (await loadSharp())(path).metadata();
  } catch {
    return { width: undefined, height: undefined, transparent: undefined };
  }
  // Without the `pages` option sharp opens one frame, so an animation reports its frame size.
  const { width, height } = meta.autoOrient;
  assertPixelBudget(width, height, limits);
  if (!meta.hasAlpha) return { width, height, transparent: false };
  try {
    const sharp = await loadSharp();
    const stats = await withImageSlot(() =>
      sharp(path, { limitInputPixels: limits.maxPixels, sequentialRead: true }).stats(),
    );
    return { width, height, transparent: !stats.isOpaque };
  } catch {
    return { width: undefined, height: undefined, transparent: undefined };
  }
}

/**
 * HEIC: sharp's prebuilt libvips reads HEIF headers but has no HEVC decoder, so pixels cannot be
 * inspected. Decision: a HEIC whose primary image carries an alpha plane counts as transparent
 * (phones and design tools write an alpha plane only for cut-outs); without one it is opaque.
 * Size from the header (sharp, else image-size).
 */
async function heicFacts(path: string): Promise<ImageFacts> {
  try {
    const meta = await (await loadSharp())(path).metadata();
    return { width: meta.autoOrient.width, height: meta.autoOrient.height, transparent: meta.hasAlpha };
  } catch {
    try {
      const size = await imageSizeFromFile(path);
      return { width: size.width, height: size.height, transparent: undefined };
    } catch {
      return { width: undefined, height: undefined, transparent: undefined };
    }
  }
}

interface TextSniff {
  isText: boolean;
  /** The whole text, when it is text and short enough to parse. */
  content: string | undefined;
  /** For text too long to keep: whether its start looks like an SVG document. */
  svgStart: boolean;
}

// C0 controls other than tab, line feed, vertical tab, form feed, carriage return and escape; DEL.
// eslint-disable-next-line no-control-regex
const BINARY_CONTROL = /[\u0000-\u0008\u000e-\u001a\u001c-\u001f\u007f]/;

/** Valid UTF-8 without binary control characters, read as a stream (any size, flat memory). */
const TEXT_SNIFF_BYTES = 1024 * 1024;

async function readUtf8Text(path: string): Promise<TextSniff> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const parts: string[] = [];
  let kept = 0;
  let keeping = true;
  let svgStart = false;
  let bytesRead = 0;
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: 64 * 1024 })) {
      const piece = decoder.decode(chunk as Buffer, { stream: true });
      if (BINARY_CONTROL.test(piece)) return { isText: false, content: undefined, svgStart: false };
      bytesRead += (chunk as Buffer).length;
      // Plain text is judged by its first MiB (as file(1) does): a 1 GiB CSV is not read a second time.
      if (!keeping && bytesRead > TEXT_SNIFF_BYTES) return { isText: true, content: undefined, svgStart };
      if (keeping) {
        parts.push(piece);
        kept += piece.length;
        if (kept > SVG_PARSE_LIMIT_CHARS) {
          svgStart = looksLikeSvg(parts.join(''));
          keeping = false;
          parts.length = 0;
        }
      }
    }
    const tail = decoder.decode();
    if (BINARY_CONTROL.test(tail)) return { isText: false, content: undefined, svgStart: false };
    if (keeping) parts.push(tail);
  } catch {
    return { isText: false, content: undefined, svgStart: false };
  }
  return { isText: true, content: keeping ? parts.join('') : undefined, svgStart };
}

/** An XML document whose root element is <svg> (after any declaration, comments, PIs, DOCTYPE). */
function looksLikeSvg(text: string): boolean {
  let rest = text.replace(/^\uFEFF/, '');
  for (;;) {
    const trimmed = rest.replace(/^\s+/, '');
    const prolog =
      /^<\?[\s\S]*?\?>/.exec(trimmed) ??
      /^<!--[\s\S]*?-->/.exec(trimmed) ??
      /^<!DOCTYPE(?:[^[>]|\[[\s\S]*?\])*>/i.exec(trimmed);
    if (!prolog) return /^<(?:[A-Za-z_][\w.-]*:)?svg[\s/>]/.test(trimmed);
    rest = trimmed.slice(prolog[0].length);
  }
}

const UNIT_PX: Record<string, number> = {
  '': 1,
  px: 1,
  pt: 4 / 3,
  pc: 16,
  in: 96,
  cm: 96 / 2.54,
  mm: 96 / 25.4,
};

/** An absolute SVG length in CSS pixels; undefined for percentages, em and the like. */
function lengthPx(value: string | null): number | undefined {
  if (value === null) return undefined;
  const match = /^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(px|pt|pc|in|cm|mm)?\s*$/i.exec(value);
  if (!match) return undefined;
  const px = Number(match[1]) * (UNIT_PX[(match[2] ?? '').toLowerCase()] ?? 1);
  return Number.isFinite(px) && px > 0 ? px : undefined;
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

function viewBoxOf(root: Element): Box | undefined {
  const numbers = (root.getAttribute('viewBox') ?? '')
    .trim()
    .split(/[\s,]+/)
    .map(Number);
  if (numbers.length !== 4 || numbers.some((n) => !Number.isFinite(n))) return undefined;
  const [x = 0, y = 0, width = 0, height = 0] = numbers;
  return width > 0 && height > 0 ? { x, y, width, height } : undefined;
}

/**
 * SVG size: the width and height attributes when absolute, else the viewBox (one of them plus the
 * viewBox's aspect ratio gives the other). Transparency: see paintsFullBackground.
 */
function svgFacts(text: string | undefined): ImageFacts {
  const parsed = text === undefined ? undefined : parseSvg(text);
  if (!parsed?.ok) return { width: undefined, height: undefined, transparent: undefined };
  const root = parsed.root;
  const viewBox = viewBoxOf(root);
  let width = lengthPx(root.getAttribute('width'));
  let height = lengthPx(root.getAttribute('height'));
  if (viewBox) {
    const ratio = viewBox.width / viewBox.height;
    if (width === undefined && height === undefined) {
      width = viewBox.width;
      height = viewBox.height;
    } else if (width === undefined && height !== undefined) width = height * ratio;
    else if (height === undefined && width !== undefined) height = width / ratio;
  }
  const canvas = viewBox ?? (width && height ? { x: 0, y: 0, width, height } : undefined);
  return {
    width: width === undefined ? undefined : Math.max(1, Math.round(width)),
    height: height === undefined ? undefined : Math.max(1, Math.round(height)),
    transparent: !paintsFullBackground(root, canvas),
  };
}

function styleProperty(element: Element, property: string): string | undefined {
  const style = element.getAttribute('style') ?? '';
  for (const declaration of style.split(';')) {
    const colon = declaration.indexOf(':');
    if (colon > 0 && declaration.slice(0, colon).trim().toLowerCase() === property) {
      return declaration.slice(colon + 1).trim();
    }
  }
  const attribute = element.getAttribute(property);
  return attribute === null ? undefined : attribute.trim();
}

function isInvisiblePaint(value: string): boolean {
  const v = value.toLowerCase().replace(/\s+/g, '');
  return (
    v === 'none' ||
    v === 'transparent' ||
    /^(?:rgba|hsla)\(.*,0(?:\.0*)?%?\)$/.test(v) ||
    /^#(?:[0-9a-f]{3}0|[0-9a-f]{6}00)$/.test(v)
  );
}

function fullyOpaque(element: Element): boolean {
  return ['opacity', 'fill-opacity'].every((property) => {
    const value = styleProperty(element, property);
    return value === undefined || Number(value) >= 1;
  });
}

/** A coordinate at the canvas origin, and an extent covering the whole canvas. */
function coversCanvas(rect: Element, canvas: Box): boolean {
  const at = (name: string, origin: number) => {
    const value = rect.getAttribute(name);
    return value === null || value.trim() === '' || Number(value) <= origin || value.trim() === '0%';
  };
  const spans = (name: string, extent: number) => {
    const value = (rect.getAttribute(name) ?? '').trim();
    if (value.endsWith('%')) return Number(value.slice(0, -1)) >= 100;
    const px = lengthPx(value);
    return px !== undefined && px >= extent;
  };
  return (
    at('x', canvas.x) && at('y', canvas.y) && spans('width', canvas.width) && spans('height', canvas.height)
  );
}

/**
 * The SVG transparency heuristic: an SVG is transparent unless it paints a full-canvas background,
 * that is, a CSS background on the root, or an untransformed <rect> (directly under the root or in
 * untransformed groups) that starts at the canvas origin, spans the whole viewBox (or width/height,
 * or 100%), and is filled with an opaque paint (an absent fill is black). Backgrounds drawn as paths,
 * or filled through <style> classes, are not recognised (the SVG then counts as transparent).
 */
function paintsFullBackground(root: Element, canvas: Box | undefined): boolean {
  const background = styleProperty(root, 'background-color') ?? styleProperty(root, 'background');
  if (background !== undefined && !isInvisiblePaint(background)) return true;
  if (!canvas) return false;
  const visit = (parent: Element, inheritedFill: string | undefined): boolean => {
    for (const child of [...parent.childNodes]) {
      if (child.nodeType !== 1) continue;
      const element = child as Element;
      if (element.namespaceURI !== SVG_NS || element.getAttribute('transform') !== null) continue;
      const fill = styleProperty(element, 'fill') ?? inheritedFill;
      if (element.localName === 'g' && fullyOpaque(element)) {
        if (visit(element, fill)) return true;
      } else if (element.localName === 'rect' && fullyOpaque(element) && coversCanvas(element, canvas)) {
        if (fill === undefined || !isInvisiblePaint(fill)) return true;
      }
    }
    return false;
  };
  return visit(root, styleProperty(root, 'fill'));
}
