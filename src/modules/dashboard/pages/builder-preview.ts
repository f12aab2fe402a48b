import { html, type Html } from '../../portal/page/html.js';
import { actionForm, renderPage, type Chrome } from '../layout.js';

/** The portal link, selectable as text, with a copy button the script reveals. */
export function portalLink(chrome: Chrome, url: string, id = 'portal-link'): Html {
  const { t } = chrome;
  return html`<p class="portal-link">
    <span class="muted">${t('builder.portal_link', 'The client’s link')}:</span>
    <code id="${id}">${url}</code>
    <button
      type="button"
      class="secondary"
      data-copy="${id}"
      data-copied="${t('builder.copied', 'Copied')}"
      hidden
    >
      ${t('builder.copy_link', 'Copy link')}
    </button>
  </p>`;
}

export interface PreviewData {
  id: string;
  projectName: string;
  status: string;
  portalUrl: string;
  phone: boolean;
}

/**
 * "Preview as the client": the portal page as the client will see it, in a frame that runs no
 * script and posts no form, so looking changes nothing (no visit recorded, nothing sent).
 */
export function previewPage(chrome: Chrome, data: PreviewData, notice: string | null): string {
  const { t } = chrome;
  const base = `/dashboard/intakes/${data.id}`;
  const body = html`<p><a href="${base}">← ${data.projectName}</a></p>
    <h1>${t('builder.preview_title', 'Preview as the client')}</h1>
    <p class="muted">
      ${t('builder.preview_hint', 'This is the page your client sees. Nothing you do here is saved or sent, and it does not count as the client’s visit.')}
    </p>
    ${
      data.status === 'draft'
        ? html`<p>
            ${t('builder.preview_draft', 'A draft: the client cannot open the link until you send it.')}
          </p>`
        : portalLink(chrome, data.portalUrl)
    }
    <div class="actions">
      <a class="button secondary" href="${base}/edit">${t('builder.edit', 'Edit')}</a>
      ${data.status === 'draft' ? actionForm(chrome, `${base}/send`, t('detail.send', 'Send to client')) : null}
      <a class="button secondary wide-only" href="${base}/preview${data.phone ? '' : '?width=phone'}"
        >${data.phone ? t('builder.preview_wide', 'Show wide') : t('builder.preview_phone', 'Show as on a phone')}</a
      >
    </div>
    <div class="preview-frame ${data.phone ? 'phone' : ''}">
      <iframe
        src="${base}/preview/frame"
        title="${t('builder.preview_frame', 'The client’s page')}"
        sandbox="allow-same-origin"
        loading="eager"
      ></iframe>
    </div>`;
  return renderPage(chrome, {
    title: t('builder.preview_title', 'Preview as the client'),
    section: 'intakes',
    body,
    notice,
  });
}
