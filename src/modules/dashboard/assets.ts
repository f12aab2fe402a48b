import { webAssets, type WebAssets } from '../../lib/web-assets.js';

export type DashboardAssets = WebAssets;

/** The dashboard's script and stylesheet (web/dashboard), served under /dashboard/assets/. */
export const dashboardAssets = webAssets({
  name: 'dashboard',
  script: 'dashboard.ts',
  style: 'dashboard.css',
});
