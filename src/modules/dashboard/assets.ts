import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { build } from 'esbuild';
import { WEB_DIR } from '../portal/page/assets.js';

/**
 * The dashboard's script and stylesheet, bundled from web/dashboard at start-up (as the portal's are)
 * and served from memory under content-hashed names.
 */
export interface DashboardAsset {
  path: string;
  contentType: string;
  body: Buffer;
}

export interface DashboardAssets {
  script: DashboardAsset;
  style: DashboardAsset;
  byPath: Map<string, DashboardAsset>;
}

const SOURCE_DIR = join(WEB_DIR, '..', 'dashboard');

function asset(ext: string, contentType: string, text: string): DashboardAsset {
  const body = Buffer.from(text);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return { path: `/dashboard/assets/dashboard.${hash}.${ext}`, contentType, body };
}

async function bundle(): Promise<DashboardAssets> {
  const result = await build({
    entryPoints: [join(SOURCE_DIR, 'dashboard.ts'), join(SOURCE_DIR, 'dashboard.css')],
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
  if (!js || !css) throw new Error('The dashboard bundle is missing its script or stylesheet');
  const script = asset('js', 'text/javascript; charset=utf-8', js.text);
  const style = asset('css', 'text/css; charset=utf-8', css.text);
  return { script, style, byPath: new Map([script, style].map((a) => [a.path, a])) };
}

let building: Promise<DashboardAssets> | undefined;

export function dashboardAssets(): Promise<DashboardAssets> {
  building ??= bundle().catch((error: unknown) => {
    building = undefined;
    throw error;
  });
  return building;
}
