import type { FastifyInstance, FastifyReply } from 'fastify';
import { formatUserCode, normalizeUserCode } from '../../domain/oauth.js';
import type { AppServices } from '../../services.js';
import { assertCsrf, csrfToken, requireUser } from '../sessions/session.js';
import { html } from '../portal/page/html.js';
import { decideDeviceAuthorization } from './device.service.js';
import { chosenGrant, modeChoices, scopeChoices } from './grant-form.js';
import { findDeviceByUserCode } from './oauth.repository.js';
import { field, sendPage } from './page.js';

export const DEVICE_PAGE_PATH = '/dashboard/device';

// ---------------------------------------------------------------------------------------------------
// Device authorization: the page where a signed-in user approves a code

function enterCodePage(reply: FastifyReply, problem?: string, status = 200): FastifyReply {
  return sendPage(
    reply,
    'Connect a device',
    html`<h1>Connect a command-line tool or agent</h1>
      ${problem ? html`<p class="error">${problem}</p>` : ''}
      <form method="get" action="${DEVICE_PAGE_PATH}">
        <label
          >Code shown in your terminal <input type="text" name="user_code" autocomplete="off" required
        /></label>
        <div class="actions"><button type="submit">Continue</button></div>
      </form>`,
    status,
  );
}

function messagePage(reply: FastifyReply, title: string, text: string): FastifyReply {
  return sendPage(
    reply,
    title,
    html`<h1>${title}</h1>
      <p>${text}</p>`,
  );
}

/** The page where a signed-in user approves (or denies) a device's code. */
export function devicePageRoutes(app: FastifyInstance, services: AppServices): void {
  const hidden = { schema: { hide: true } };
  const db = services.db.kysely;

  app.get<{ Querystring: { user_code?: string } }>(DEVICE_PAGE_PATH, hidden, async (request, reply) => {
    const user = await requireUser(request, reply);
    if (!user) return reply;
    const typed = request.query.user_code;
    if (!typed) return enterCodePage(reply);
    const userCode = normalizeUserCode(typed);
    const row = userCode ? await findDeviceByUserCode(db, userCode) : undefined;
    if (!row || row.status !== 'pending' || row.expires_at <= services.clock.now().toISOString()) {
      return enterCodePage(reply, 'That code is unknown, expired or already used: check your terminal.', 404);
    }
    return sendPage(
      reply,
      'Approve device',
      html`<h1>Approve ${row.client_name}?</h1>
        <p>Signed in as ${user.email}. Approve only if your terminal shows this code:</p>
        <p class="code">${formatUserCode(row.user_code)}</p>
        <p>It gets an API key with the access you tick below, kept on that machine until you revoke it.</p>
        <form method="post" action="${DEVICE_PAGE_PATH}">
          <input type="hidden" name="_csrf" value="${csrfToken(request, reply)}" />
          <input type="hidden" name="user_code" value="${row.user_code}" />
          ${scopeChoices(row.requested_scopes, user.role)} ${modeChoices()}
          <div class="actions">
            <button type="submit" name="decision" value="approve">Approve</button>
            <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
          </div>
        </form>`,
    );
  });

  app.post(DEVICE_PAGE_PATH, hidden, async (request, reply) => {
    const user = await requireUser(request, reply);
    if (!user) return reply;
    assertCsrf(request, field(request.body, '_csrf'));
    const userCode = normalizeUserCode(field(request.body, 'user_code'));
    if (!userCode) return enterCodePage(reply, 'That is not a code this service issues.', 422);
    const at = services.clock.now();
    if (field(request.body, 'decision') !== 'approve') {
      await decideDeviceAuthorization(db, userCode, { approve: false }, at);
      return messagePage(reply, 'Request denied', 'The device gets no access. You can close this page.');
    }
    const grant = chosenGrant(request.body, user.role);
    if (typeof grant === 'string') return enterCodePage(reply, grant, 422);
    const decided = await decideDeviceAuthorization(
      db,
      userCode,
      { approve: true, ...grant, accountId: user.accountId, userId: user.userId },
      at,
    );
    if (!decided) return enterCodePage(reply, 'That code is unknown, expired or already used.', 404);
    return messagePage(
      reply,
      'Device connected',
      'Return to your terminal: it now has its API key. You can close this page.',
    );
  });
}
