import type { Comment } from '../../../domain/comments.js';
import { isFileType, isOwnerItem } from '../../../domain/items.js';
import { conversationOf } from '../../comments/comments.service.js';
import { eventsOfIntake } from '../../events/events.service.js';
import { signFileUrl } from '../../files/signed-url.js';
import { historyOf } from '../../history/history.service.js';
import {
  applicableItemKeys,
  filesOfIntake,
  getIntake,
  getIntakeStatus,
  itemsOfIntakes,
} from '../../intakes/intakes.service.js';
import { listKeys } from '../../keys/keys.service.js';
import { listUsers } from '../../sessions/sessions.service.js';
import { conditionReason } from '../condition-view.js';
import type { DashboardContext } from '../context.js';
import { intakeDetailPage } from '../pages/intake-detail.js';
import type { CardNote, CommentView, HistoryEntry, ItemView } from '../pages/review.js';

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

/** Who did something, for people: the client by name, a person by name or email, a key by its name. */
type Namer = (type: string, id: string | null, nameThen?: string | null) => string | null;

async function namer(ctx: DashboardContext, clientName: string): Promise<Namer> {
  const { t } = ctx;
  const db = ctx.services.db.kysely;
  const [users, keys] = await Promise.all([
    listUsers(db, ctx.account.id),
    listKeys(db, ctx.account.id, false),
  ]);
  return (type, id, nameThen) => {
    if (type === 'client') return clientName;
    if (type === 'user') {
      const person = users.find((u) => u.id === id);
      return (person ? (person.name ?? person.email) : nameThen) ?? t('review.who.person', 'a person');
    }
    if (type === 'api_key') {
      const name = keys.find((k) => k.id === id)?.name ?? nameThen;
      return name
        ? t('review.who.key', 'API key “{{name}}”', { name })
        : t('review.who.some_key', 'an API key');
    }
    return t('review.who.system', 'automatically');
  };
}

function commentView(ctx: DashboardContext, comment: Comment, who: Namer): CommentView {
  const fromClient = comment.author === 'client';
  return {
    id: comment.id,
    who: fromClient
      ? ctx.t('comments.client', '{{name}} (client)', { name: who('client', null) ?? '' })
      : (who(comment.actor.type, comment.actor.id, comment.actor.name) ?? ''),
    fromClient,
    body: comment.body,
    at: comment.created_at,
  };
}

export async function itemViews(ctx: DashboardContext, intakeId: string, who: Namer): Promise<ItemView[]> {
  const { t } = ctx;
  const db = ctx.services.db.kysely;
  const rows = await itemsOfIntakes(db, ctx.world, [intakeId]);
  const files = await filesOfIntake(db, ctx.world, intakeId);
  const comments = await conversationOf(db, {
    id: intakeId,
    account_id: ctx.world.accountId,
    livemode: ctx.world.livemode ? 1 : 0,
  });
  // The one rule of the portal, completion and reminders: an item an earlier answer leaves unmet is not needed.
  const applies = applicableItemKeys(rows);
  const words = { yes: t('review.yes', 'Yes'), no: t('review.no', 'No'), or: t('items.or', 'or') };
  const notNeeded = (row: (typeof rows)[number]): string | null => {
    const condition = row.definition.show_if;
    if (!condition || applies.has(row.key)) return null;
    const source = rows.find((r) => r.key === condition.item_key)?.definition;
    const reason = conditionReason(condition, source, words);
    return reason.kind === 'answered'
      ? t('items.when_answered', 'asked only once “{{item}}” is answered', { item: reason.item })
      : t('items.when_equals', 'asked only when “{{item}}” is {{value}}', {
          item: reason.item,
          value: reason.value,
        });
  };
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
      owner: isOwnerItem(def),
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
      section: def.section ?? null,
      notNeeded: notNeeded(row),
      comments: comments.filter((c) => c.item_key === row.key).map((c) => commentView(ctx, c, who)),
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
  who: Namer,
): Promise<HistoryEntry[]> {
  const { t } = ctx;
  const db = ctx.services.db.kysely;
  const [byItem, events] = await Promise.all([
    historyOf(db, intakeId),
    eventsOfIntake(db, ctx.world, intakeId),
  ]);
  const labels = new Map(items.map((i) => [i.key, i.label]));
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
  const who = await namer(ctx, intake.client.name ?? intake.client.email);
  const items = await itemViews(ctx, intake.id, who);
  const history = await historyEntries(ctx, intake.id, items, who);
  return intakeDetailPage(ctx, { intake, status, items, history, ...(acted ? { acted } : {}) }, notice);
}
