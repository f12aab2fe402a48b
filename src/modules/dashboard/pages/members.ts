import type { z } from 'zod';
import { ROLES, type Role } from '../../../domain/roles.js';
import { flag, html, type Html } from '../../portal/page/html.js';
import type { Member } from '../../sessions/members.schemas.js';
import {
  actionForm,
  badge,
  csrfField,
  dataTable,
  moment,
  renderPage,
  roleLabel,
  type Chrome,
} from '../layout.js';

type MemberView = z.infer<typeof Member>;

function roleHelp(chrome: Chrome, role: Role): string {
  const { t } = chrome;
  return {
    owner: t('members.help_owner', 'the account holder: everything, billing included'),
    admin: t('members.help_admin', 'everything but billing and ownership'),
    member: t('members.help_member', 'creates, sends and reviews intakes'),
    viewer: t('members.help_viewer', 'reads, changes nothing'),
  }[role];
}

/** The roles `me` may give: owner only by the owner (it hands ownership over). */
function grantable(me: Role): Role[] {
  return ROLES.filter((role) => role !== 'owner' || me === 'owner');
}

function roleCell(chrome: Chrome, me: { id: string; role: Role }, member: MemberView): Html {
  if (member.role === 'owner' || member.id === me.id) return html`${roleLabel(chrome, member.role)}`;
  const { t } = chrome;
  return html`<form method="post" action="/dashboard/members/${member.id}/role" class="inline-form">
    ${csrfField(chrome.csrf)}
    <label class="visually-hidden" for="role-${member.id}"
      >${t('members.role_of', 'Role of {{email}}', { email: member.email })}</label
    >
    <select id="role-${member.id}" name="role">
      ${grantable(me.role).map(
        (role) =>
          html`<option value="${role}" ${flag('selected', role === member.role)}>
            ${roleLabel(chrome, role)}
          </option>`,
      )}
    </select>
    <button type="submit" class="secondary">${t('members.change_role', 'Change')}</button>
  </form>`;
}

export function membersPage(
  chrome: Chrome,
  data: {
    me: { id: string; role: Role };
    members: MemberView[];
    seats: { used: number; limit: number };
    plan: string;
  },
  extra: { notice?: string | null; error?: string | null } = {},
): string {
  const { t } = chrome;
  const full = data.seats.used >= data.seats.limit;
  const body = html`<h1>${t('members.title', 'Members')}</h1>
    <p class="muted">
      ${t('members.seats', '{{used}} of {{limit}} seats used on the {{plan}} plan.', {
        used: data.seats.used,
        limit: data.seats.limit,
        plan: data.plan,
      })}
    </p>
    ${dataTable(
      [
        { label: t('members.person', 'Person') },
        { label: t('members.role', 'Role') },
        { label: t('members.last_sign_in', 'Last sign-in'), optional: true },
        { label: '' },
      ],
      data.members,
      (m) =>
        html`<tr data-member="${m.email}">
          <td>
            ${m.name ? html`<strong>${m.name}</strong><br />` : null}<span class="wrap">${m.email}</span>
            <br />${badge(
              m.status === 'invited' ? 'pending' : 'active',
              m.status === 'invited' ? t('members.invited', 'invited') : t('members.active', 'active'),
            )}
          </td>
          <td>${roleCell(chrome, data.me, m)}</td>
          <td class="optional">${moment(m.last_signed_in_at)}</td>
          <td>
            ${
              m.role !== 'owner' && m.id !== data.me.id
                ? actionForm(chrome, `/dashboard/members/${m.id}/remove`, t('members.remove', 'Remove'), {
                    danger: true,
                    confirm: t(
                      'members.remove_confirm',
                      'Remove {{email}}? Their sessions, the API keys they made and the agent access they approved end at once.',
                      { email: m.email },
                    ),
                  })
                : null
            }
          </td>
        </tr>`,
    )}
    <div class="card invite-card">
      <h2>${t('members.invite', 'Invite a colleague')}</h2>
      ${
        full
          ? html`<p>
              ${t('members.full', 'Every seat of the {{plan}} plan is taken: upgrade the plan or remove someone first.', { plan: data.plan })}
            </p>`
          : html`<form method="post" action="/dashboard/members">
              ${csrfField(chrome.csrf)}
              <label for="invite-email">${t('members.email', 'Email')}</label>
              <input type="email" id="invite-email" name="email" required autocomplete="off" />
              <label for="invite-name">${t('members.name', 'Name (optional)')}</label>
              <input type="text" id="invite-name" name="name" maxlength="100" autocomplete="off" />
              <fieldset>
                <legend>${t('members.role', 'Role')}</legend>
                ${grantable(data.me.role)
                  .filter((role) => role !== 'owner')
                  .map(
                    (role) =>
                      html`<label class="inline"
                        ><input
                          type="radio"
                          name="role"
                          value="${role}"
                          ${flag('checked', role === 'member')}
                        />
                        <span
                          ><strong>${roleLabel(chrome, role)}</strong>: ${roleHelp(chrome, role)}</span
                        ></label
                      >`,
                  )}
              </fieldset>
              <p class="muted">
                ${t('members.invite_help', 'They get an email with a one-time sign-in link.')}
              </p>
              <div class="actions">
                <button type="submit">${t('members.invite_button', 'Send invitation')}</button>
              </div>
            </form>`
      }
    </div>`;
  return renderPage(chrome, {
    title: t('members.title', 'Members'),
    section: 'members',
    body,
    notice: extra.notice,
    error: extra.error,
  });
}
