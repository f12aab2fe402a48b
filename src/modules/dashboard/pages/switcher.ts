import { html } from '../../portal/page/html.js';
import { actionForm, dataTable, renderPage, roleLabel, type Chrome } from '../layout.js';

/**
 * /dashboard/accounts: every account the signed-in person belongs to, with their role in each. A
 * person of several accounts who has used none yet lands here after their sign-in link.
 */
export function switcherPage(chrome: Chrome, notice: string | null): string {
  const { t } = chrome;
  const accounts = chrome.accounts ?? [];
  const body = html`<h1>${t('accounts.title', 'Your accounts')}</h1>
    <p class="muted">
      ${t(
        'accounts.intro',
        'Your address belongs to these accounts. Choose the one to work in; you can switch at any time from the header.',
      )}
    </p>
    ${dataTable(
      [
        { label: t('accounts.account', 'Account') },
        { label: t('accounts.role', 'Your role') },
        { label: '' },
      ],
      accounts,
      (a) =>
        html`<tr>
          <td>${a.name}</td>
          <td>${roleLabel(chrome, a.role)}</td>
          <td>
            ${
              a.id === chrome.accountId
                ? html`<span class="muted">${t('accounts.current', 'Current account')}</span>`
                : actionForm(chrome, '/dashboard/accounts/switch', t('accounts.open', 'Open'), {
                    secondary: true,
                    fields: { account_id: a.id },
                  })
            }
          </td>
        </tr>`,
    )}`;
  return renderPage(chrome, { title: t('accounts.title', 'Your accounts'), section: null, body, notice });
}
