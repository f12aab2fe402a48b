import { DOMParser, XMLSerializer, type Document, type Element, type Node } from '@xmldom/xmldom';

export const SVG_NS = 'http://www.w3.org/2000/svg';
const XLINK_NS = 'http://www.w3.org/1999/xlink';
const XML_NS = 'http://www.w3.org/XML/1998/namespace';
const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';

const NODE = { element: 1, text: 3, cdata: 4, processingInstruction: 7, comment: 8, doctype: 10 };

/**
 * SVG elements that only draw, group, define paint or describe: nothing here loads, links, runs
 * or animates (no script, foreignObject, a, image, feImage, iframe, animate, set…).
 */
const ALLOWED_ELEMENTS = new Set([
  'svg',
  'g',
  'defs',
  'symbol',
  'use',
  'title',
  'desc',
  'metadata',
  'style',
  'path',
  'rect',
  'circle',
  'ellipse',
  'line',
  'polyline',
  'polygon',
  'text',
  'tspan',
  'textPath',
  'linearGradient',
  'radialGradient',
  'stop',
  'pattern',
  'clipPath',
  'mask',
  'marker',
  'filter',
  'feBlend',
  'feColorMatrix',
  'feComponentTransfer',
  'feComposite',
  'feConvolveMatrix',
  'feDiffuseLighting',
  'feDisplacementMap',
  'feDistantLight',
  'feDropShadow',
  'feFlood',
  'feFuncA',
  'feFuncB',
  'feFuncG',
  'feFuncR',
  'feGaussianBlur',
  'feMerge',
  'feMergeNode',
  'feMorphology',
  'feOffset',
  'fePointLight',
  'feSpecularLighting',
  'feSpotLight',
  'feTile',
  'feTurbulence',
]);

/** xml:space and xml:lang are harmless; xml:base would re-point "#id" references elsewhere. */
const ALLOWED_XML_ATTRIBUTES = new Set(['space', 'lang']);
const MAX_DEPTH = 256;
const FRAGMENT = /^#[A-Za-z_][\w.:-]*$/;

export type SvgParse = { ok: true; document: Document; root: Element } | { ok: false; reason: string };

/**
 * Parses SVG text without ever expanding entities or fetching anything: documents with a DOCTYPE
 * (the only place entities can be declared: billion laughs, external entities) are refused outright.
 */
export function parseSvg(text: string): SvgParse {
  if (/<!DOCTYPE/i.test(text) || /<!ENTITY/i.test(text)) {
    return { ok: false, reason: 'DOCTYPE and ENTITY declarations are not allowed in SVG uploads' };
  }
  const problems: string[] = [];
  let document: Document;
  try {
    document = new DOMParser({
      locator: false,
      onError: (level, message) => {
        if (level !== 'warning') problems.push(message);
      },
    }).parseFromString(text, 'image/svg+xml');
  } catch (error) {
    return {
      ok: false,
      reason: `not well-formed XML (${error instanceof Error ? error.message : 'parse error'})`,
    };
  }
  if (problems.length > 0) return { ok: false, reason: `not well-formed XML (${problems[0] ?? ''})` };
  const root = document.documentElement;
  if (!root || root.localName !== 'svg' || root.namespaceURI !== SVG_NS) {
    return { ok: false, reason: 'the root element is not <svg>' };
  }
  return { ok: true, document, root };
}

function isElement(node: Node): node is Element {
  return node.nodeType === NODE.element;
}

/** Lower-cased, with whitespace and control characters removed: how browsers read URL schemes. */
function squeezed(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u0020\u007f-\u009f]+/g, '').toLowerCase();
}

function hasScriptScheme(value: string): boolean {
  const s = squeezed(value);
  return s.includes('javascript:') || s.includes('vbscript:');
}

/** Every url(…) in the text points inside the document (`url(#id)`). */
function urlsAreLocal(value: string): boolean {
  const pattern = /url\s*\(\s*(['"]?)(.*?)\1\s*\)/gis;
  const urls = [...value.matchAll(pattern)];
  if (urls.some((match) => !FRAGMENT.test((match[2] ?? '').trim()))) return false;
  // An unterminated or oddly written url( that the pattern did not match is refused as well.
  return (value.match(/url\s*\(/gi) ?? []).length === urls.length;
}

/**
 * CSS (a style attribute or a <style> element) is kept only when it cannot reach outside the
 * document or run anything: no escapes (which could spell any of the following), no @import,
 * no url() other than #fragments, no image-set(), expression(), behavior or -moz-binding.
 */
function cssIsSafe(css: string): boolean {
  if (css.includes('\\')) return false;
  const s = squeezed(css);
  if (
    s.includes('@import') ||
    s.includes('image-set(') ||
    s.includes('expression(') ||
    s.includes('behavior:') ||
    s.includes('-moz-binding') ||
    s.includes('src:')
  ) {
    return false;
  }
  return !hasScriptScheme(css) && urlsAreLocal(css);
}

function attributeIsSafe(name: string, namespace: string | null, value: string): boolean {
  const local = name.includes(':') ? name.slice(name.indexOf(':') + 1) : name;
  if (namespace === XMLNS_NS || name === 'xmlns' || name.startsWith('xmlns:')) return true;
  if (namespace === XML_NS) return ALLOWED_XML_ATTRIBUTES.has(local);
  if (/^on/i.test(local)) return false;
  if (local.toLowerCase() === 'href' && (namespace === null || namespace === XLINK_NS)) {
    return FRAGMENT.test(value.trim());
  }
  if (namespace !== null && namespace !== XLINK_NS) return false;
  if (hasScriptScheme(value)) return false;
  if (local === 'style') return cssIsSafe(value);
  if (/url\s*\(/i.test(value)) return urlsAreLocal(value);
  return true;
}

/** Cleans an element in place; returns why the document must be refused instead, if it must. */
function sanitizeElement(document: Document, element: Element, depth: number): string | undefined {
  if (depth > MAX_DEPTH) return `elements nested deeper than ${MAX_DEPTH} levels`;
  for (const attribute of [...element.attributes]) {
    if (!attributeIsSafe(attribute.name, attribute.namespaceURI, attribute.value)) {
      element.removeAttributeNode(attribute);
    }
  }
  for (const child of [...element.childNodes]) {
    if (isElement(child)) {
      if (child.namespaceURI !== SVG_NS || !ALLOWED_ELEMENTS.has(child.localName ?? '')) {
        element.removeChild(child);
        continue;
      }
      const problem = sanitizeElement(document, child, depth + 1);
      if (problem) return problem;
    } else if (child.nodeType === NODE.cdata) {
      // CDATA becomes plain text: the serializer escapes it, and nothing can hide in a section.
      const text = document.createTextNode(child.nodeValue ?? '');
      element.replaceChild(text, child);
    } else if (child.nodeType !== NODE.text) {
      element.removeChild(child);
    }
  }
  if (element.localName === 'style' && !cssIsSafe(element.textContent ?? '')) {
    element.parentNode?.removeChild(element);
  }
  return undefined;
}

/** Elements drawn once every <use> is expanded (one level: chains are refused first). */
export const MAX_SVG_RENDERED_ELEMENTS = 20_000;

function elementsOf(root: Element): Element[] {
  const out: Element[] = [];
  const stack: Element[] = [root];
  while (stack.length > 0) {
    const element = stack.pop() as Element;
    out.push(element);
    for (const child of [...element.childNodes]) if (isElement(child)) stack.push(child);
  }
  return out;
}

function useTarget(use: Element): string | undefined {
  const href = use.getAttribute('href') ?? use.getAttributeNS(XLINK_NS, 'href');
  return href && FRAGMENT.test(href.trim()) ? href.trim().slice(1) : undefined;
}

/**
 * `<use>` copies another element, so a chain of them multiplies (a 1.9 KB file of nested uses took
 * 7.3 s to render). A <use> may refer only to an element with no <use> in it, and the drawing,
 * every use expanded, stays under MAX_SVG_RENDERED_ELEMENTS.
 */
function useProblem(root: Element): string | undefined {
  const elements = elementsOf(root);
  const byId = new Map<string, Element>();
  for (const element of elements) {
    const id = element.getAttribute('id');
    if (id && !byId.has(id)) byId.set(id, element);
  }
  let rendered = elements.length;
  for (const use of elements.filter((e) => e.localName === 'use')) {
    const id = useTarget(use);
    const target = id === undefined ? undefined : byId.get(id);
    if (!target) continue;
    const copied = elementsOf(target);
    if (copied.some((e) => e.localName === 'use')) {
      return '<use> refers to an element that itself contains <use> (nested references are not accepted)';
    }
    rendered += copied.length;
    if (rendered > MAX_SVG_RENDERED_ELEMENTS) {
      return `the drawing expands to more than ${MAX_SVG_RENDERED_ELEMENTS} elements through <use>`;
    }
  }
  return undefined;
}

/**
 * An allowlist sanitizer: the result holds only drawing elements and their presentation
 * attributes, references only to #fragments of the same document, and no scripts, event handlers,
 * external resources or javascript: URLs. Refuses what it cannot clean safely (DOCTYPE, entities,
 * malformed XML, a root other than <svg>).
 */
export function sanitizeSvg(text: string): { ok: true; svg: string } | { ok: false; reason: string } {
  const parsed = parseSvg(text);
  if (!parsed.ok) return parsed;
  const { document, root } = parsed;
  for (const node of [...document.childNodes]) {
    if (node !== root) document.removeChild(node);
  }
  const problem = sanitizeElement(document, root, 0) ?? useProblem(root);
  if (problem) return { ok: false, reason: problem };
  return { ok: true, svg: new XMLSerializer().serializeToString(document) };
}
