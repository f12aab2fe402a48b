import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import { ErrorBody } from '../../http/schemas.js';
import type { AppServices } from '../../services.js';
import { UpdateIntakeBody, UpdateItemBody } from './editing.schemas.js';
import { deleteItem, updateIntakeSettings, updateItemDefinition } from './editing.service.js';
import { Intake, IntakeItem, IntakeItemParams, IntakeParams } from './intakes.schemas.js';
import { worldOfAuth } from '../../kernel/world.js';

const tags = ['Intakes'];

/** Editing after sending: the intake's settings and its items. */
export function intakeEditingRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.patch('/v1/intakes/:id', {
    config: { scope: 'intakes:write', audit: { action: 'intake.update', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Change an intake after creation',
      description:
        'Project name, due date, client name/phone/language/timezone, chase settings, client_brief, folder_id. New chase settings, due date or time zone re-plan the pending reminders from now. 409 for an archived intake.',
      params: IntakeParams,
      body: UpdateIntakeBody,
      response: { 200: Intake },
    },
    handler: (request) => {
      const auth = authOf(request);
      return updateIntakeSettings(
        services,
        worldOfAuth(auth),
        auth.account.plan,
        request.params.id,
        request.body,
      );
    },
  });

  api.patch('/v1/intakes/:id/items/:key', {
    config: { scope: 'intakes:write', audit: { action: 'intake.item_update', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Change an item',
      description:
        "409 item_answer_would_be_discarded when the client's answer would no longer be valid, unless discard_submitted_value is true (the item then starts over as pending). 503 when too many costly structured answers are being checked at once (send it again shortly).",
      params: IntakeItemParams,
      body: UpdateItemBody,
      // 503: the structured-answer checks' queue is full (lib/schema-budget.ts).
      response: { 200: IntakeItem, 503: ErrorBody },
    },
    handler: (request) => {
      return updateItemDefinition(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.params.key,
        request.body,
      );
    },
  });

  api.delete('/v1/intakes/:id/items/:key', {
    config: { scope: 'intakes:write', audit: { action: 'intake.item_delete', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Delete an item without a submission',
      description: '409 when the client submitted it (or it was decided), or when it is the only item.',
      params: IntakeItemParams,
      response: { 204: z.null().meta({ description: 'Deleted' }) },
    },
    handler: async (request, reply) => {
      await deleteItem(services, worldOfAuth(authOf(request)), request.params.id, request.params.key);
      return reply.code(204).send(null);
    },
  });
}
