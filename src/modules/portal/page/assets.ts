import { webAssets, type WebAssets } from '../../../lib/web-assets.js';

export type PortalAssets = WebAssets;

/** The portal's script and stylesheet (web/portal), served under /portal/assets/. */
export const portalAssets = webAssets({ name: 'portal', script: 'main.ts', style: 'portal.css' });
