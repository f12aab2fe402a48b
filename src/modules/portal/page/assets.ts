import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/**
 * The portal's script and stylesheet, bundled from web/portal at start-up (esbuild, a few hundred
 * milliseconds) and kept in memory: nothing to build by hand, nothing generated to commit, and the
 * served files always match the sources. Names carry a content hash, so they are cached for a year.
 */
export interface Asset {
  path: string;
  contentType: string;
  body: Buffer;
  gzip: Buffer;
}

export interface PortalAssets {
  script: Asset;
  style: Asset;
  byPath: Map<string, Asset>;
}

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the portal module');
    dir = parent;
  }
  return dir;
}

export const WEB_DIR = join(packageRoot(), 'web', 'portal');

function asset(name: string, ext: string, contentType: string, text: string): Asset {
  const body = Buffer.from(text);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return {
    path: `/portal/assets/${name}.${hash}.${ext}`,
    contentType,
    body,
    gzip: gzipSync(body, { level: 9 }),
  };
}

async function bundle(): Promise<PortalAssets> {
  const result = await build({
    entryPoints: [join(WEB_DIR, 'main.ts'), join(WEB_DIR, 'portal.css')],
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
  if (!js || !css) throw new Error('The portal bundle is missing its script or stylesheet');
  const script = asset('portal', 'js', 'text/javascript; charset=utf-8', js.text);
  const style = asset('portal', 'css', 'text/css; charset=utf-8', css.text);
  return { script, style, byPath: new Map([script, style].map((a) => [a.path, a])) };
}

let building: Promise<PortalAssets> | undefined;

/** Built once per process, on first use. */
export function portalAssets(): Promise<PortalAssets> {
  building ??= bundle().catch((error: unknown) => {
    building = undefined;
    throw error;
  });
  return building;
}
