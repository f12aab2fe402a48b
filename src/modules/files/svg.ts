import { DOMParser as XmlParser, type Document, type Element } from '@xmldom/xmldom';
import type { Worker } from 'node:worker_threads';
import type { DOMPurify, Config as PurifyConfig } from 'dompurify';
import { spawnModuleWorker } from '../../lib/module-worker.js';

export const SVG_NS = 'http://www.w3.org/2000/svg';
const XLINK_NS = 'http://www.w3.org/1999/xlink';
const PARSER_ERROR_NS = 'http://www.mozilla.org/newlayout/xml/parsererror.xml';

const MAX_DEPTH = 256;
const FRAGMENT = /^#[A-Za-z_][\w.:-]*$/;

export type SvgParse = { ok: true; document: Document; root: Element } | { ok: false; reason: string };

/** Refused before any parser sees the text: the only place entities can be declared (billion laughs, XXE). */
function doctypeProblem(text: string): string | undefined {
  return /<!DOCTYPE/i.test(text) || /<!ENTITY/i.test(text)
    ? 'DOCTYPE and ENTITY declarations are not allowed in SVG uploads'
    : undefined;
}

/**
 * Parses SVG text without ever expanding entities or fetching anything, for reading its facts
 * (size, transparency: files/inspect.ts). Documents with a DOCTYPE are refused outright.
 */
export function parseSvg(text: string): SvgParse {
  const doctype = doctypeProblem(text);
  if (doctype) return { ok: false, reason: doctype };
  const problems: string[] = [];
  let document: Document;
  try {
    document = new XmlParser({
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
 * DOMPurify does not read CSS: this is ours.
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

/**
 * Elements DOMPurify's SVG profile allows that a logo or icon does not need and that link, load or
 * animate: links (navigation), raster images and feImage (external resources), and every animation
 * element (which can rewrite an attribute such as href after sanitising).
 */
const FORBIDDEN_TAGS = [
  'a',
  'image',
  'feImage',
  'animate',
  'animateColor',
  'animateMotion',
  'animateTransform',
  'set',
  'mpath',
  'discard',
  'script',
  'foreignObject',
];

const PURIFY_CONFIG: PurifyConfig = {
  IN_PLACE: true,
  USE_PROFILES: { svg: true, svgFilters: true },
  // <use> is outside the profile (it can load another document): kept, pointing only at a #id of
  // this one (the hook below), and its chains refused (useProblem).
  ADD_TAGS: ['use'],
  FORBID_TAGS: FORBIDDEN_TAGS,
  // A removed element goes with its content: the text of a <script> in another namespace is not
  // left behind as text to draw.
  KEEP_CONTENT: false,
  ALLOW_DATA_ATTR: false,
};

/** The part of jsdom's DOM the sanitizer touches (the server has no DOM types: see types/jsdom.d.ts). */
interface XNode {
  readonly nodeType: number;
  readonly nodeValue: string | null;
  readonly textContent: string | null;
}
interface XElement extends XNode {
  readonly localName: string;
  readonly namespaceURI: string | null;
  readonly childNodes: Iterable<XNode>;
  readonly children: Iterable<XElement>;
  getAttribute(name: string): string | null;
  getAttributeNS(namespace: string, name: string): string | null;
  getElementsByTagNameNS(namespace: string, name: string): { readonly length: number };
  replaceChild(replacement: XNode, child: XNode): XNode;
  remove(): void;
}
interface XDocument {
  readonly documentElement: XElement;
  createTextNode(text: string): XNode;
}
interface XWindow {
  DOMParser: new () => { parseFromString(text: string, type: string): XDocument };
  XMLSerializer: new () => { serializeToString(node: XElement): string };
}

interface Purifier {
  purify: DOMPurify;
  window: XWindow;
}

let purifier: Promise<Purifier> | undefined;

/**
 * DOMPurify over jsdom, loaded on the first SVG (importing jsdom costs more than the rest of the
 * server's start). jsdom runs no script and loads no resource unless asked to (runScripts and
 * resources stay unset), and the XML documents it parses here have no browsing context at all.
 */
async function loadPurifier(): Promise<Purifier> {
  purifier ??= (async () => {
    const [{ JSDOM }, { default: createDOMPurify }] = await Promise.all([
      import('jsdom'),
      import('dompurify'),
    ]);
    const { window } = new JSDOM('');
    const purify = createDOMPurify(window as Parameters<typeof createDOMPurify>[0]);
    purify.addHook('uponSanitizeAttribute', (_node, data) => {
      const name = data.attrName.toLowerCase();
      const value = data.attrValue;
      if (name === 'href' || name === 'xlink:href') {
        // Only a reference inside the document: no other file, no data: or javascript: URL.
        data.keepAttr = FRAGMENT.test(value.trim());
      } else if (hasScriptScheme(value)) {
        data.keepAttr = false;
      } else if (name === 'style') {
        data.keepAttr = cssIsSafe(value);
      } else if (/url\s*\(/i.test(value)) {
        data.keepAttr = urlsAreLocal(value);
      }
    });
    return { purify, window: window as XWindow };
  })();
  return purifier;
}

/** Elements of the tree, root first, without recursion. */
function elementsOf(root: XElement): XElement[] {
  const out: XElement[] = [];
  const stack: XElement[] = [root];
  while (stack.length > 0) {
    const element = stack.pop() as XElement;
    out.push(element);
    for (const child of [...element.children]) stack.push(child);
  }
  return out;
}

/**
 * Before DOMPurify: refuses absurd nesting, turns CDATA into text (the serializer escapes it, and
 * DOMPurify would drop the section with the stylesheet in it) and removes <style> elements whose
 * CSS reaches outside the document.
 */
function prepare(document: XDocument, root: XElement): string | undefined {
  const CDATA = 4;
  const stack: Array<[XElement, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [element, depth] = stack.pop() as [XElement, number];
    if (depth > MAX_DEPTH) return `elements nested deeper than ${MAX_DEPTH} levels`;
    for (const child of [...element.childNodes]) {
      if (child.nodeType === CDATA)
        element.replaceChild(document.createTextNode(child.nodeValue ?? ''), child);
    }
    if (element.localName === 'style' && !cssIsSafe(element.textContent ?? '')) {
      element.remove();
      continue;
    }
    for (const child of [...element.children]) stack.push([child, depth + 1]);
  }
  return undefined;
}

/** Elements drawn once every <use> is expanded (one level: chains are refused first). */
export const MAX_SVG_RENDERED_ELEMENTS = 20_000;

function useTarget(use: XElement): string | undefined {
  const href = use.getAttribute('href') ?? use.getAttributeNS(XLINK_NS, 'href');
  return href && FRAGMENT.test(href.trim()) ? href.trim().slice(1) : undefined;
}

/**
 * `<use>` copies another element, so a chain of them multiplies (a 1.9 KB file of nested uses took
 * 7.3 s to render). A <use> may refer only to an element with no <use> in it, and the drawing,
 * every use expanded, stays under MAX_SVG_RENDERED_ELEMENTS.
 */
function useProblem(root: XElement): string | undefined {
  const elements = elementsOf(root);
  const byId = new Map<string, XElement>();
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

export type SvgSanitized = { ok: true; svg: string } | { ok: false; reason: string };

/**
 * Sanitises an uploaded SVG with DOMPurify (its SVG and SVG-filter profiles) over a jsdom XML
 * document: the tree DOMPurify cleans is the XML tree a browser builds from the served file, so
 * there is no HTML-versus-XML parse difference to exploit. Beyond the profile: href and
 * xlink:href only to a #id of the document, url(…) only to #ids, CSS without imports or escapes,
 * no links, images or animation, <use> without chains or expansion past MAX_SVG_RENDERED_ELEMENTS.
 * Refuses what it cannot clean safely (DOCTYPE and entities, before any parser runs; malformed XML;
 * a root other than <svg>; absurd nesting). The result is a standalone SVG document.
 */
export async function sanitizeSvgHere(text: string): Promise<SvgSanitized> {
  const doctype = doctypeProblem(text);
  if (doctype) return { ok: false, reason: doctype };
  const { purify, window } = await loadPurifier();
  const document = new window.DOMParser().parseFromString(text, 'image/svg+xml');
  const root = document.documentElement;
  if (root.namespaceURI === PARSER_ERROR_NS || root.getElementsByTagNameNS(PARSER_ERROR_NS, '*').length > 0) {
    const detail = (root.textContent ?? '').trim().split('\n')[0] ?? '';
    return { ok: false, reason: `not well-formed XML (${detail || 'parse error'})` };
  }
  if (root.localName !== 'svg' || root.namespaceURI !== SVG_NS) {
    return { ok: false, reason: 'the root element is not <svg>' };
  }
  const problem = prepare(document, root);
  if (problem) return { ok: false, reason: problem };
  purify.sanitize(root, PURIFY_CONFIG);
  const expansion = useProblem(root);
  if (expansion) return { ok: false, reason: expansion };
  return { ok: true, svg: new window.XMLSerializer().serializeToString(root) };
}

interface SvgReply {
  id: number;
  result: SvgSanitized;
}

let svgWorker: Worker | undefined;
let svgSequence = 0;
/** SVGs sent to a worker and not yet answered, with the worker that holds each. */
const pendingSvgs = new Map<number, { worker: Worker; resolve: (result: SvgSanitized) => void }>();

/**
 * How long one SVG may take, the worker's start with jsdom included (about 2 s): past it the worker
 * is ended (every SVG it held is refused) and the next SVG starts a new one. The pre-checks keep
 * every accepted input far below it; this bounds what they did not foresee.
 */
export const SVG_DEADLINE_MS = 20_000;
/** The sanitiser's heap: a drawing that would need more ends its worker instead of the process's memory. */
const SVG_WORKER_LIMITS = { maxOldGenerationSizeMb: 512 };
let svgDeadlineMs = SVG_DEADLINE_MS;

/** Internal knob: tests shorten the deadline. */
export function tuneSvgDeadline(ms: number): void {
  svgDeadlineMs = ms;
}

/** The worker that sanitises, started on the first SVG; a failed one is replaced on the next. */
function sanitizerWorker(): Worker {
  if (svgWorker) return svgWorker;
  const worker = spawnModuleWorker(import.meta.url, 'svg-worker', SVG_WORKER_LIMITS);
  worker.on('message', (reply: SvgReply) => {
    pendingSvgs.get(reply.id)?.resolve(reply.result);
    pendingSvgs.delete(reply.id);
  });
  const fail = () => {
    if (svgWorker === worker) svgWorker = undefined;
    for (const [id, pending] of pendingSvgs) {
      if (pending.worker !== worker) continue;
      pending.resolve({ ok: false, reason: 'the SVG could not be sanitised' });
      pendingSvgs.delete(id);
    }
  };
  worker.on('error', fail);
  worker.on('exit', fail);
  svgWorker = worker;
  return worker;
}

/**
 * Sanitises an uploaded SVG (sanitizeSvgHere) in a worker thread: loading jsdom takes 1.5-2.4 s
 * and sanitising a large drawing is work too, neither of which may hold the event loop. The worker
 * (and jsdom in it) starts on the first SVG, so start-up does not grow.
 */
export async function sanitizeSvg(text: string): Promise<SvgSanitized> {
  const worker = sanitizerWorker();
  const id = ++svgSequence;
  const result = new Promise<SvgSanitized>((resolve) => pendingSvgs.set(id, { worker, resolve }));
  // While a sanitising is under way the worker keeps the process alive; idle, it does not.
  worker.ref();
  worker.postMessage({ id, text });
  const deadline = setTimeout(() => {
    pendingSvgs.get(id)?.resolve({ ok: false, reason: 'the SVG took too long to sanitise' });
    pendingSvgs.delete(id);
    // The next SVG starts a new worker at once; this one's other SVGs are refused as it exits.
    if (svgWorker === worker) svgWorker = undefined;
    void worker.terminate();
  }, svgDeadlineMs);
  try {
    return await result;
  } finally {
    clearTimeout(deadline);
    if (![...pendingSvgs.values()].some((pending) => pending.worker === worker)) worker.unref();
  }
}
