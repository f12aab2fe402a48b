import { isFileType } from '../../../domain/items.js';
import { eventsOfIntake } from '../../events/events.service.js';
import { signFileUrl } from '../../files/signed-url.js';
import { historyOf } from '../../history/history.service.js';
import { filesOfIntake, getIntake, getIntakeStatus, itemsOfIntakes } from '../../intakes/intakes.service.js';
import { listKeys } from '../../keys/keys.service.js';
import { listUsers } from '../../sessions/sessions.service.js';
import type { DashboardContext } from '../context.js';
import { intakeDetailPage } from '../pages/intake-detail.js';
import type { CardNote, HistoryEntry, ItemView } from '../pages/review.js';

const PREVIEWABLE = /^image\/(png|jpeg|webp|gif|svg\+xml)$/;

/** Public events of the intake itself that the history shows (item events come from the item history). */
const INTAKE_EVENTS = [
  'intake.sent',
  'intake.viewed',
  'intake.completed',
  'intake.complete',
  'intake.stalled',
  'intake.overdue',
  'chase.sent',
  'chase.bounced',
  'chase.opted_out',
] as const;

export async function itemViews(ctx: DashboardContext, intakeId: string): Promise<ItemView[]> {
  const db = ctx.services.db.kysely;
  const rows = await itemsOfIntakes(db, ctx.world, [intakeId]);
  const files = await filesOfIntake(db, ctx.world, intakeId);
  const now = ctx.services.clock.now().getTime();
  return rows.map((row) => {
    const def = row.definition;
    const mine = files.filter((f) => f.item_key === row.key);
    return {
      key: row.key,
      label: def.label,
      type: def.type,
      options: def.options,
      schema: def.schema,
      status: row.status,
      required: def.required,
      owner: def.assignee === 'owner',
      revisionNote: row.status === 'needs_revision' ? row.revision_note : null,
      submittedAt: row.submitted_at,
      approvedAt: row.approved_at,
      value: row.value,
      secret: def.type === 'secret',
      secretRevealedAt: row.secret_revealed_at,
      secretReady:
        row.secret_ciphertext !== null && (row.status === 'submitted' || row.status === 'approved'),
      files: isFileType(def.type)
        ? mine.map((f) => ({
            id: f.id,
            name: f.name,
            size: Number(f.size),
            contentType: f.content_type,
            url: signFileUrl(ctx.services.config.baseUrl, ctx.services.config.secretKey, f.id, now).url,
            preview: PREVIEWABLE.test(f.content_type)
              ? `/dashboard/intakes/${intakeId}/items/${row.key}/files/${f.id}/preview`
              : null,
          }))
        : [],
      proposed: def.proposed ? { value: def.proposed.value, rationale: def.proposed.rationale } : null,
    };
  });
}

/**
 * The intake's history for people: each item's submissions, revision requests and approvals by the
 * item's label and who did it (the client by name, a person by email, an API key by its name), and the
 * intake's own events (sent, opened, reminded, completed), newest first.
 */
async function historyEntries(
  ctx: DashboardContext,
  intakeId: string,
  items: readonly ItemView[],
  clientName: string,
): Promise<HistoryEntry[]> {
  const { t } = ctx;
  const db = ctx.services.db.kysely;
  const [byItem, events, users, keys] = await Promise.all([
    historyOf(db, intakeId),
    eventsOfIntake(db, ctx.world, intakeId),
    listUsers(db, ctx.account.id),
    listKeys(db, ctx.account.id, false),
  ]);
  const labels = new Map(items.map((i) => [i.key, i.label]));
  const who = (type: string, id: string | null): string | null => {
    if (type === 'client') return clientName;
    if (type === 'user') return users.find((u) => u.id === id)?.email ?? t('review.who.person', 'a person');
    if (type === 'api_key') {
      const name = keys.find((k) => k.id === id)?.name;
      return name
        ? t('review.who.key', 'API key “{{name}}”', { name })
        : t('review.who.some_key', 'an API key');
    }
    return t('review.who.system', 'automatically');
  };
  // Newest first by the history's own sequence, so that entries of one instant keep the order they
  // were made in (the sort below is stable).
  const rows = [...byItem.values()].flat().sort((a, b) => Number(b.seq) - Number(a.seq));
  const entries: HistoryEntry[] = rows.map((row) => ({
    at: row.occurred_at,
    what: t(`review.history.${row.action}`, row.action.replace(/_/g, ' ')),
    item: labels.get(row.item_key) ?? row.item_key,
    who: who(row.actor_type, row.actor_id),
    note: row.note,
  }));
  for (const event of events) {
    if (!(INTAKE_EVENTS as readonly string[]).includes(event.type)) continue;
    entries.push({
      at: event.occurred_at,
      what: t(`review.event.${event.type.replace('.', '_')}`, event.type),
      item: null,
      who: null,
      note: null,
    });
  }
  // Newest first; at the same instant the intake's event (completed, say) above the item changes that
  // caused it, which keeps those together.
  const newestFirst = (a: HistoryEntry, b: HistoryEntry) =>
    a.at < b.at ? 1 : a.at > b.at ? -1 : Number(a.item !== null) - Number(b.item !== null);
  return groupedHistory(entries.sort(newestFirst));
}

/**
 * One line for what one actor did to several items at once (a client sending 17 answers, an owner
 * approving all): consecutive entries of the same action and actor within a minute, newest first.
 */
export function groupedHistory(entries: readonly HistoryEntry[]): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  for (const entry of entries) {
    const last = out[out.length - 1];
    const together =
      last !== undefined &&
      last.item !== null &&
      entry.item !== null &&
      last.what === entry.what &&
      last.who === entry.who &&
      !last.note &&
      !entry.note &&
      Date.parse(last.at) - Date.parse(entry.at) < 60_000;
    if (together) out[out.length - 1] = { ...last, item: `${entry.item}, ${last.item}` };
    else out.push(entry);
  }
  return out;
}

/** The intake's page, optionally with what an action just did on one item's card. */
export async function intakePage(
  ctx: DashboardContext,
  id: string,
  notice: string | null,
  acted?: { key: string } & CardNote,
): Promise<string> {
  const intake = await getIntake(ctx.services, ctx.world, id);
  const status = await getIntakeStatus(ctx.services, ctx.world, id);
  const items = await itemViews(ctx, intake.id);
  const history = await historyEntries(ctx, intake.id, items, intake.client.name ?? intake.client.email);
  return intakeDetailPage(ctx, { intake, status, items, history, ...(acted ? { acted } : {}) }, notice);
}
