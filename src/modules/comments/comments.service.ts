import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { isOwnerItem } from '../../domain/items.js';
import { ApiError } from '../../http/errors.js';
import { raise } from '../../kernel/domain-events.js';
import { emitIntakeEvent } from '../../kernel/public-events.js';
import type { World } from '../../kernel/world.js';
import { newId } from '../../lib/ids.js';
import type { AppServices } from '../../services.js';
import { requireIntake, type IntakeRow } from '../intakes/intakes.service.js';
import { requireItem, withLockedIntake } from '../intakes/review.service.js';
import {
  commentsOf,
  deleteCommentsOf,
  findComment,
  insertComment,
  markEmailed,
  nextSeq,
  waitingOwnerComments,
  type CommentRow,
} from './comments.repository.js';
import { isCommentActorType, type ClientComment, type CommentAuthor } from '../../domain/comments.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import { keyNameOf } from '../keys/keys.service.js';
import type { Comment, CommentList, CommentListQuery } from './comments.schemas.js';

/**
 * A conversation on every item. The owner writes from the API, the agent tools or the dashboard; the
 * client from the portal. A client's comment is a public event (comment.created: webhooks and the
 * owner notifications hear it); an owner's comment is told to the client in the intake's batched
 * email (ownerCommented, planned by the reminders module, which knows opt-outs and quiet hours).
 */

declare module '../../kernel/domain-events.js' {
  interface DomainEventMap {
    /** The owner commented on an item of a sent intake: the client is emailed (batched per intake). */
    ownerCommented: { world: World; intake: IntakeRow };
  }
}

export function toComment(row: CommentRow): z.infer<typeof Comment> {
  return {
    id: row.id,
    item_key: row.item_key,
    author: row.author as CommentAuthor,
    body: row.body,
    created_at: row.created_at,
    actor: {
      type: isCommentActorType(row.actor_type) ? row.actor_type : 'system',
      id: row.actor_type === 'client' ? null : row.actor_id,
      name: row.actor_type === 'client' ? null : row.actor_name,
    },
  };
}

/** What the client reads of a comment: never who on the owner's side wrote it (the page names the account). */
export function toClientComment({ actor: _actor, ...comment }: z.infer<typeof Comment>): ClientComment {
  return comment;
}

/**
 * Writes a comment on an item of a locked intake, in the caller's transaction, with what it causes:
 * comment.created for the client's, the client's email for the owner's (once the intake is sent).
 */
export async function recordComment(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  itemKey: string,
  author: CommentAuthor,
  body: string,
  actorName: string | null = null,
): Promise<z.infer<typeof Comment>> {
  const row: CommentRow = {
    id: newId('cmt'),
    account_id: intake.account_id,
    livemode: intake.livemode,
    intake_id: intake.id,
    item_key: itemKey,
    author,
    actor_type: world.actor.type,
    actor_id: world.actor.id,
    actor_name: actorName,
    body,
    created_at: world.clock.now().toISOString(),
    seq: await nextSeq(trx, world, intake.id),
    emailed_at: null,
  };
  await insertComment(trx, row);
  // The audit entry of the owner's action (API or dashboard) commits with the comment and names it.
  await auditInTransaction(trx, row.id);
  const comment = toComment(row);
  if (author === 'client') {
    await emitIntakeEvent(trx, world, intake, 'comment.created', {
      comment_id: comment.id,
      item_key: comment.item_key,
      author: comment.author,
      body: comment.body,
      created_at: comment.created_at,
    });
  } else if (intake.status !== 'draft') {
    await raise(trx, 'ownerCommented', { world, intake });
  }
  return comment;
}

/**
 * POST /v1/intakes/:id/items/:key/comments (and the agent tool, and the dashboard). The comment keeps
 * who wrote it: `personName` for a person in the dashboard (their name, else their email), the key's
 * name for an API key.
 */
export async function addOwnerComment(
  services: AppServices,
  world: World,
  intakeId: string,
  key: string,
  body: string,
  personName?: string,
): Promise<z.infer<typeof Comment>> {
  const db = services.db.kysely;
  const found = await requireIntake(db, world, intakeId);
  const actorName =
    personName ??
    (world.actor.type === 'api_key' && world.actor.id !== null
      ? await keyNameOf(db, world.accountId, world.actor.id)
      : null);
  return withLockedIntake(db, found, async (trx, intake) => {
    await requireItem(trx, intake, key);
    if (intake.status === 'archived') throw new ApiError('conflict', 'The intake is archived.');
    return recordComment(trx, world, intake, key, 'owner', body, actorName);
  });
}

/** The client's comment on a locked intake's item: decisions (owner items) are not the client's. */
export async function addClientComment(
  trx: Kysely<Database>,
  world: World,
  intake: IntakeRow,
  key: string,
  body: string,
): Promise<ClientComment> {
  const item = await requireItem(trx, intake, key);
  if (isOwnerItem(item.definition)) {
    throw new ApiError('not_found', `Intake ${intake.id} has no item with key ${key}.`);
  }
  return toClientComment(await recordComment(trx, world, intake, key, 'client', body));
}

/** GET /v1/intakes/:id/comments: oldest first, paged by starting_after. */
export async function listComments(
  services: AppServices,
  world: World,
  intakeId: string,
  query: z.output<typeof CommentListQuery>,
): Promise<z.infer<typeof CommentList>> {
  const db = services.db.kysely;
  const intake = await requireIntake(db, world, intakeId);
  let afterSeq = 0;
  if (query.starting_after !== undefined) {
    const after = await findComment(db, world, intake.id, query.starting_after);
    if (!after) {
      throw new ApiError('invalid_request', `starting_after: no comment with id ${query.starting_after}.`);
    }
    afterSeq = after.seq;
  }
  const rows = await commentsOf(db, world, intake.id, {
    afterSeq,
    limit: query.limit + 1,
    itemKey: query.item_key,
  });
  return { comments: rows.slice(0, query.limit).map(toComment), has_more: rows.length > query.limit };
}

/** Every comment of an intake, oldest first (the dashboard's view, results; the portal's, narrowed). */
export async function conversationOf(
  db: Kysely<Database>,
  intake: Pick<IntakeRow, 'id' | 'account_id' | 'livemode'>,
): Promise<z.infer<typeof Comment>[]> {
  const tenant = { accountId: intake.account_id, livemode: intake.livemode === 1 };
  return (await commentsOf(db, tenant, intake.id)).map(toComment);
}

/** Read and written by other modules through this module's surface (the rows are this module's). */
export { deleteCommentsOf, markEmailed, waitingOwnerComments };
