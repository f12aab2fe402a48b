import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { translator } from '../../i18n/index.js';
import type { AppServices } from '../../services.js';
import { portalAssets } from './page/assets.js';
import { intakeBranding } from './page/page.service.js';
import { renderNoticePage, type NoticeContent } from './page/notice.js';
import { portalSecurityHeaders } from './portal.security.js';

export type { NoticeContent };

/**
 * A one-message page for the client outside the portal page itself (the reminder opt-out), in the
 * portal's look: the sender's branding, the portal stylesheet, the portal's strict headers (no
 * inline style: the accent colour comes with a nonce, like the portal page's).
 */
export async function sendNoticePage(
  services: AppServices,
  reply: FastifyReply,
  page: {
    status: number;
    language: string;
    intake: { id: string; account_id: string } | null;
    content: NoticeContent;
  },
): Promise<FastifyReply> {
  const assets = await portalAssets();
  const t = translator(page.language, 'portal');
  const branding = page.intake
    ? await intakeBranding(services, page.intake)
    : { accountName: t('service'), logoUrl: null, accentColor: null };
  const nonce = randomBytes(16).toString('base64');
  return reply
    .code(page.status)
    .headers(portalSecurityHeaders(nonce))
    .header('Cache-Control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(
      renderNoticePage(
        { t, language: page.language, branding },
        { scriptPath: assets.script.path, stylePath: assets.style.path },
        nonce,
        { switcher: false, ...page.content },
      ),
    );
}
