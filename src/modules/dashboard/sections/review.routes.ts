import type { FastifyInstance } from 'fastify';
import { MAX_COMMENT_CHARS } from '../../../domain/comments.js';
import { ApiError } from '../../../http/errors.js';
import { addOwnerComment } from '../../comments/comments.service.js';
import { requireIntake } from '../../intakes/intakes.service.js';
import { revealSecret } from '../../intakes/results.service.js';
import { approveItem, approveItems, requestRevision } from '../../intakes/review.service.js';
import { findUserInAccount } from '../../sessions/sessions.service.js';
import { asUserAction } from '../context.js';
import { action, redirect, type Deps } from '../routing.js';
import { intakePage } from './intake-view.js';

type ItemParams = { id: string; key: string };

/** The intake page opened at one item's card, with the action's notice on it. */
function backToItem(intakeId: string, key: string, notice: string): string {
  return `/dashboard/intakes/${intakeId}?${new URLSearchParams({ notice, item: key }).toString()}#item-${key}`;
}

/**
 * Review from the intake's page, through the services of the REST API's review routes, each audited
 * as the signed-in person. Every form works as a plain POST that comes back to the same item
 * (post/redirect/get to its anchor); the dashboard's script sends the same POST with fetch and swaps
 * the item's card in place.
 */
export function reviewRoutes(scope: FastifyInstance, deps: Deps): void {
  action<ItemParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/items/:key/approve',
    async (ctx, _form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const key = request.params.key;
      await asUserAction(ctx, 'intake.item_approve', 'intake', intake.id, () =>
        approveItem(ctx.services, ctx.world, intake.id, key),
      );
      return reply.redirect(backToItem(intake.id, key, 'approved'), 303);
    },
  );

  action<ItemParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/items/:key/revision',
    async (ctx, form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const key = request.params.key;
      const note = (form.get('note') ?? '').trim();
      if (!note || note.length > 2000) {
        throw new ApiError(
          'invalid_request',
          'note: say what the client should change (at most 2,000 characters).',
        );
      }
      await asUserAction(ctx, 'intake.revision_request', 'intake', intake.id, () =>
        requestRevision(ctx.services, ctx.world, intake.id, key, note),
      );
      return reply.redirect(backToItem(intake.id, key, 'revision'), 303);
    },
  );

  // A comment to the client as the signed-in person, through the API's comments service: the client
  // sees it on their page and is emailed (batched); the comment keeps who wrote it.
  action<ItemParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/items/:key/comments',
    async (ctx, form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const key = request.params.key;
      const body = (form.get('body') ?? '').trim();
      if (!body || body.length > MAX_COMMENT_CHARS) {
        throw new ApiError('invalid_request', 'body: write a comment of at most 5,000 characters.');
      }
      const person = await findUserInAccount(ctx.services.db.kysely, ctx.account.id, ctx.user.email);
      await asUserAction(ctx, 'comment.create', 'comment', null, () =>
        addOwnerComment(ctx.services, ctx.world, intake.id, key, body, person?.name ?? ctx.user.email),
      );
      return reply.redirect(backToItem(intake.id, key, 'commented'), 303);
    },
  );

  // Approve all: every submitted answer in one transaction (POST /v1/intakes/:id/approve).
  action<{ id: string }>(
    scope,
    deps,
    '/dashboard/intakes/:id/approve',
    async (ctx, _form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const done = await asUserAction(ctx, 'intake.approve', 'intake', intake.id, () =>
        approveItems(ctx.services, ctx.world, intake.id, undefined),
      );
      return redirect(
        reply,
        `/dashboard/intakes/${intake.id}`,
        done.approved.length > 0 ? 'approved_all' : 'nothing_to_approve',
      );
    },
  );

  // A secret, shown once to the person who asks, the reveal audited: the API's one-time rule (410 after).
  // The answer is the page itself, never a redirect: the secret must not travel in a URL.
  action<ItemParams>(
    scope,
    deps,
    '/dashboard/intakes/:id/items/:key/reveal',
    async (ctx, _form, request, reply) => {
      const intake = await requireIntake(ctx.services.db.kysely, ctx.world, request.params.id);
      const key = request.params.key;
      const secret = await asUserAction(ctx, 'intake.secret_reveal', 'intake', intake.id, () =>
        revealSecret(ctx.services, ctx.world, intake.id, key),
      );
      reply.header('Cache-Control', 'no-store');
      return intakePage(ctx, intake.id, null, { key, revealed: secret.value });
    },
  );
}
