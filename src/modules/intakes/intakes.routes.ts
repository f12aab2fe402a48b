import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ErrorBody } from '../../http/schemas.js';
import { hasScope } from '../../domain/scopes.js';
import { authOf } from '../../http/auth.js';
import { validateIdempotencyKey } from '../../http/idempotency.js';
import type { AppServices } from '../../services.js';
import {
  AddItemsBody,
  ApprovalResult,
  ApproveBody,
  ApproveItemsBody,
  ApprovedItems,
  CreateIntakeBody,
  CreatedIntake,
  Intake,
  IntakeItemParams,
  IntakeList,
  IntakeListQuery,
  IntakeParams,
  IntakeStatusObject,
  ItemsAdded,
  Results,
  ResultsQuery,
  RevisionBody,
  RevisionResult,
  SecretValue,
} from './intakes.schemas.js';
import {
  addItems,
  archiveIntake,
  createIntake,
  deleteIntake,
  getIntake,
  getIntakeStatus,
  listIntakesOf,
  sendIntake,
} from './intakes.service.js';
import { collectResults, revealSecret } from './results.service.js';
import { approveItem, approveItems, requestRevision } from './review.service.js';
import { worldOfAuth } from '../../kernel/world.js';

const tags = ['Intakes'];
export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z.string().optional().meta({
    description:
      'Optional; a UUID is recommended. Kept 24 hours per API key: a retry returns the original intake (200).',
  }),
});
/** Action endpoints take no body; an empty JSON object is accepted too. */
const NoBody = z.strictObject({}).nullish();

export function intakeRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.post('/v1/intakes', {
    config: { scope: 'intakes:write', audit: { action: 'intake.create', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Define an intake',
      description: 'Creates the intake and sends the portal link unless send is false (a draft).',
      headers: IdempotencyHeaders,
      body: CreateIntakeBody,
      response: {
        201: CreatedIntake,
        200: CreatedIntake.describe('Replay of an earlier request with the same Idempotency-Key'),
      },
    },
    handler: async (request, reply) => {
      const auth = authOf(request);
      const key = validateIdempotencyKey(request.headers['idempotency-key']);
      const outcome = await createIntake(
        services,
        worldOfAuth(auth),
        auth.account.plan,
        auth.keyId,
        request.body,
        key,
      );
      request.auditResourceId = outcome.value.intake_id;
      return reply.code(outcome.created ? 201 : 200).send(outcome.value);
    },
  });

  // Lists, intakes and their status are polled by agents and depend on the rows alone: kept between commits.
  api.get('/v1/intakes', {
    config: { scope: 'intakes:read', keepBetweenCommits: true },
    schema: {
      tags,
      summary: 'List intakes',
      description:
        "Newest first, with the whole list's total. Paged with limit and offset, or by cursor: starting_after (the last id of the previous page) while has_more is true.",
      querystring: IntakeListQuery,
      response: { 200: IntakeList },
    },
    handler: (request) => listIntakesOf(services, worldOfAuth(authOf(request)), request.query),
  });

  api.get('/v1/intakes/:id', {
    config: { scope: 'intakes:read', keepBetweenCommits: true },
    schema: { tags, summary: 'Get an intake', params: IntakeParams, response: { 200: Intake } },
    handler: (request) => getIntake(services, worldOfAuth(authOf(request)), request.params.id),
  });

  api.get('/v1/intakes/:id/status', {
    config: { scope: 'intakes:read', keepBetweenCommits: true },
    schema: {
      tags,
      summary: 'Progress of an intake',
      operationId: 'get_intake_status',
      params: IntakeParams,
      response: { 200: IntakeStatusObject },
    },
    handler: (request) => getIntakeStatus(services, worldOfAuth(authOf(request)), request.params.id),
  });

  api.get('/v1/intakes/:id/results', {
    config: { scope: 'intakes:read' },
    schema: {
      tags,
      summary: 'Typed results of approved items',
      operationId: 'get_intake_results',
      params: IntakeParams,
      querystring: ResultsQuery,
      response: { 200: Results },
    },
    handler: (request) => {
      const auth = authOf(request);
      return collectResults(services, worldOfAuth(auth), request.params.id, {
        onlyNew: request.query.only_new ?? false,
        includePending: request.query.include_pending ?? false,
        canReadSecrets: hasScope(auth.scopes, 'secrets:read'),
      });
    },
  });

  api.post('/v1/intakes/:id/items', {
    config: { scope: 'intakes:write', audit: { action: 'intake.items_add', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Add items to an intake',
      params: IntakeParams,
      body: AddItemsBody,
      response: { 201: ItemsAdded },
    },
    handler: async (request, reply) => {
      return reply
        .code(201)
        .send(await addItems(services, worldOfAuth(authOf(request)), request.params.id, request.body));
    },
  });

  api.post('/v1/intakes/:id/revision', {
    config: { scope: 'intakes:write', audit: { action: 'intake.revision_request', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Ask the client to revise an item',
      operationId: 'request_revision',
      params: IntakeParams,
      body: RevisionBody,
      response: { 200: RevisionResult },
    },
    handler: (request) => {
      return requestRevision(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.body.item_key,
        request.body.note,
      );
    },
  });

  api.post('/v1/intakes/:id/items/:key/approve', {
    config: { scope: 'intakes:write', audit: { action: 'intake.item_approve', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Approve a submitted item',
      description: 'An optional note goes to the client (shown in the portal) and into the item history.',
      params: IntakeItemParams,
      body: ApproveBody,
      response: { 200: ApprovalResult },
    },
    handler: (request) => {
      return approveItem(
        services,
        worldOfAuth(authOf(request)),
        request.params.id,
        request.params.key,
        request.body?.note ?? null,
      );
    },
  });

  api.post('/v1/intakes/:id/approve', {
    config: { scope: 'intakes:write', audit: { action: 'intake.approve', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Approve every submitted item at once',
      description:
        'Approves every submitted item (or only item_keys) in one transaction: each gets its item.approved event and history entry, and the intake completes when nothing required is left. Items already approved are left as they are, so the call can be repeated.',
      params: IntakeParams,
      body: ApproveItemsBody,
      response: { 200: ApprovedItems },
    },
    handler: (request) => {
      return approveItems(services, worldOfAuth(authOf(request)), request.params.id, request.body?.item_keys);
    },
  });

  api.post('/v1/intakes/:id/send', {
    config: { scope: 'intakes:write', audit: { action: 'intake.send', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Send a draft intake',
      description: 'Only a draft can be sent (409 otherwise).',
      params: IntakeParams,
      body: NoBody,
      response: { 200: Intake },
    },
    handler: (request) => {
      return sendIntake(services, worldOfAuth(authOf(request)), request.params.id);
    },
  });

  api.post('/v1/intakes/:id/archive', {
    config: { scope: 'intakes:write', audit: { action: 'intake.archive', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Archive an intake',
      description: 'The portal then answers 410.',
      params: IntakeParams,
      body: NoBody,
      response: { 200: Intake },
    },
    handler: (request) => {
      return archiveIntake(services, worldOfAuth(authOf(request)), request.params.id);
    },
  });

  api.delete('/v1/intakes/:id', {
    config: { scope: 'intakes:write', audit: { action: 'intake.delete', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Delete an intake permanently',
      description: 'Irreversibly deletes the intake, its items and every uploaded file.',
      params: IntakeParams,
      response: { 204: z.null().meta({ description: 'Deleted' }) },
    },
    handler: async (request, reply) => {
      await deleteIntake(services, worldOfAuth(authOf(request)), request.params.id);
      return reply.code(204).send(null);
    },
  });

  api.get('/v1/intakes/:id/items/:key/secret', {
    config: { scope: 'secrets:read', audit: { action: 'intake.secret_reveal', resourceType: 'intake' } },
    schema: {
      tags,
      summary: 'Reveal a secret item once',
      description: 'Answers 410 gone after the first reveal (here or in results).',
      params: IntakeItemParams,
      // 410 once revealed; 422 when the item is not a secret item.
      response: { 200: SecretValue, 410: ErrorBody, 422: ErrorBody },
    },
    handler: (request) => {
      return revealSecret(services, worldOfAuth(authOf(request)), request.params.id, request.params.key);
    },
  });
}
