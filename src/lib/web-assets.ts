import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/**
 * A front end's script and stylesheet (web/<name>), bundled at start-up (esbuild, a few hundred
 * milliseconds) and kept in memory: nothing to build by hand, nothing generated to commit, and the
 * served files always match the sources. Names carry a content hash, so they are cached for a year.
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

async function bundleWeb(bundle: WebBundle): Promise<WebAssets> {
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
  const script = asset(bundle, 'js', 'text/javascript; charset=utf-8', js.text);
  const style = asset(bundle, 'css', 'text/css; charset=utf-8', css.text);
  return { script, style, byPath: new Map([script, style].map((a) => [a.path, a])) };
}

/** The bundle, built once per process on first use (a failed build is tried again next time). */
export function webAssets(bundle: WebBundle): () => Promise<WebAssets> {
  let building: Promise<WebAssets> | undefined;
  return () => {
    building ??= bundleWeb(bundle).catch((error: unknown) => {
      building = undefined;
      throw error;
    });
    return building;
  };
}
