import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/**
 * A front end's script and stylesheet (web/<name>), bundled at start-up (esbuild, a few hundred
 * milliseconds) and kept in memory: nothing to build by hand, nothing generated to commit, and the
 * served files always match the sources. Names carry a content hash, so they are cached for a year.
 * The production build (`npm run build`) bundles them once into dist/web/<name>/, which the compiled
 * service reads instead: no bundler in the production process.
 */
export interface Asset {
  path: string;
  contentType: string;
  body: Buffer;
  gzip: Buffer;
}

export interface WebAssets {
  script: Asset;
  style: Asset;
  byPath: Map<string, Asset>;
}

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the web assets module');
    dir = parent;
  }
  return dir;
}

/** The front-end sources of the package: web/portal, web/dashboard. */
export const WEB_ROOT = join(packageRoot(), 'web');

export interface WebBundle {
  /** Folder under web/ and the served file names' stem: `portal` → /portal/assets/portal.<hash>.js. */
  name: string;
  /** The script and stylesheet entry points, relative to that folder. */
  script: string;
  style: string;
}

function asset(bundle: WebBundle, ext: string, contentType: string, text: string): Asset {
  const body = Buffer.from(text);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return {
    path: `/${bundle.name}/assets/${bundle.name}.${hash}.${ext}`,
    contentType,
    body,
    gzip: gzipSync(body, { level: 9 }),
  };
}

/** Where the production build writes the bundles: dist/web/, beside the compiled modules. */
const PREBUILT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', 'web');

async function compile(bundle: WebBundle): Promise<{ js: string; css: string }> {
  const { build } = await import('esbuild');
  const dir = join(WEB_ROOT, bundle.name);
  const result = await build({
    entryPoints: [join(dir, bundle.script), join(dir, bundle.style)],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    outdir: 'out',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const js = result.outputFiles.find((f) => f.path.endsWith('.js'));
  const css = result.outputFiles.find((f) => f.path.endsWith('.css'));
  if (!js || !css) throw new Error(`The ${bundle.name} bundle is missing its script or stylesheet`);
  return { js: js.text, css: css.text };
}

async function bundleWeb(bundle: WebBundle): Promise<WebAssets> {
  const prebuilt = join(PREBUILT_ROOT, bundle.name);
  const { js, css } = existsSync(join(prebuilt, 'bundle.js'))
    ? {
        js: await readFile(join(prebuilt, 'bundle.js'), 'utf8'),
        css: await readFile(join(prebuilt, 'bundle.css'), 'utf8'),
      }
    : await compile(bundle);
  const script = asset(bundle, 'js', 'text/javascript; charset=utf-8', js);
  const style = asset(bundle, 'css', 'text/css; charset=utf-8', css);
  return { script, style, byPath: new Map([script, style].map((a) => [a.path, a])) };
}

const declared: WebBundle[] = [];

/** The production build: every declared bundle compiled into `webDir`/<name>/bundle.{js,css}. */
export async function prebuildWebAssets(webDir: string): Promise<string[]> {
  for (const bundle of declared) {
    const { js, css } = await compile(bundle);
    await mkdir(join(webDir, bundle.name), { recursive: true });
    await writeFile(join(webDir, bundle.name, 'bundle.js'), js);
    await writeFile(join(webDir, bundle.name, 'bundle.css'), css);
  }
  return declared.map((bundle) => bundle.name);
}

/** The bundle, built once per process on first use (a failed build is tried again next time). */
export function webAssets(bundle: WebBundle): () => Promise<WebAssets> {
  declared.push(bundle);
  let building: Promise<WebAssets> | undefined;
  return () => {
    building ??= bundleWeb(bundle).catch((error: unknown) => {
      building = undefined;
      throw error;
    });
    return building;
  };
}
