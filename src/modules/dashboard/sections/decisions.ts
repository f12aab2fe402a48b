import type { FastifyInstance } from 'fastify';
import { decideOwnerItem } from '../../intakes/decisions.service.js';
import { requireIntake } from '../../intakes/intakes.service.js';
import { requireItem } from '../../intakes/review.service.js';
import { asUserAction } from '../context.js';
import { action, redirect, type Deps } from '../routing.js';

/**
 * The typed value of a decision typed into one text field: numbers and booleans by type, lists and
 * objects as JSON (a multiselect or colour list also as comma-separated text), text kinds as typed.
 * The decisions service checks the value against the item's definition.
 */
export function decisionValue(type: string, raw: string): unknown {
  const text = raw.trim();
  if (type === 'number') return text === '' ? null : Number(text);
  if (type === 'boolean') return ['true', 'yes', 'on', '1'].includes(text.toLowerCase());
  if (type === 'multiselect' || type === 'color_list' || type === 'structured') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return type === 'structured'
        ? text
        : text
            .split(',')
            .map((part) => part.trim())
            .filter(Boolean);
    }
  }
  return raw;
}

/** Owner decisions (items with assignee "owner") are answered in the dashboard, by a person. */
export function decisionRoutes(scope: FastifyInstance, deps: Deps): void {
  action<{ id: string; key: string }>(
    scope,
    deps,
    '/dashboard/intakes/:id/items/:key/decide',
    async (ctx, form, request, reply) => {
      const db = ctx.services.db.kysely;
      const intake = await requireIntake(db, ctx.world, request.params.id);
      const item = await requireItem(db, intake, request.params.key);
      const value = decisionValue(item.definition.type, form.get('value') ?? '');
      await asUserAction(ctx, 'intake.item_decide', 'intake', intake.id, () =>
        decideOwnerItem(ctx.services, ctx.world, intake.id, item.key, value),
      );
      return redirect(reply, `/dashboard/intakes/${intake.id}`, 'decided');
    },
  );
}
