import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { worldOfAuth } from '../../kernel/world.js';
import {
  CreateWebhookBody,
  CreatedWebhookEndpoint,
  DeliveriesQuery,
  DeliveryAttempt,
  DeliveryPage,
  RotateSecretBody,
  RotatedWebhookSecret,
  TestWebhookBody,
  UpdateWebhookBody,
  WebhookEndpoint,
  WebhookList,
  WebhookParams,
} from './webhooks.schemas.js';
import {
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  rotateSecret,
  sendTestEvent,
  updateWebhook,
} from './webhooks.service.js';

const tags = ['Webhooks'];

/**
 * Webhook endpoints. Every route needs the admin scope: an endpoint receives every subscribed
 * event of its mode, so registering one is as powerful as reading all intakes.
 */
export function webhookRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/v1/webhooks', {
    config: { scope: 'admin' },
    schema: {
      tags,
      summary: 'List webhook endpoints',
      description:
        'Newest first, without secrets. Endpoints deregistered by an HTTP 410 show status disabled.',
      response: { 200: WebhookList },
    },
    handler: async (request) => listWebhooks(services, worldOfAuth(authOf(request))),
  });

  api.post('/v1/webhooks', {
    config: { scope: 'admin', audit: { action: 'webhook.create', resourceType: 'webhook_endpoint' } },
    schema: {
      tags,
      summary: 'Register a webhook endpoint',
      description:
        'The secret (supplied or generated) is in this response only. Unknown event names: 422. More endpoints than the plan allows: 402 plan_required. A URL that is not https in production, or that resolves to a loopback, private, link-local or otherwise non-public address (unless WEBHOOK_ALLOW_PRIVATE): 422.',
      body: CreateWebhookBody,
      response: { 201: CreatedWebhookEndpoint },
    },
    handler: async (request, reply) => {
      const auth = authOf(request);
      const created = await createWebhook(services, worldOfAuth(auth), auth.account.plan, request.body);
      request.auditResourceId = created.id;
      return reply.code(201).send(created);
    },
  });

  api.patch('/v1/webhooks/:id', {
    config: { scope: 'admin', audit: { action: 'webhook.update', resourceType: 'webhook_endpoint' } },
    schema: {
      tags,
      summary: 'Change a webhook endpoint',
      description:
        'url, events and format; only the fields given change. Checked as at registration (422 for unknown event names or a refused URL). The secret is not shown.',
      params: WebhookParams,
      body: UpdateWebhookBody,
      response: { 200: WebhookEndpoint },
    },
    handler: async (request) => {
      return updateWebhook(services, worldOfAuth(authOf(request)), request.params.id, request.body);
    },
  });

  api.delete('/v1/webhooks/:id', {
    config: { scope: 'admin', audit: { action: 'webhook.delete', resourceType: 'webhook_endpoint' } },
    schema: {
      tags,
      summary: 'Remove a webhook endpoint',
      description: 'Pending deliveries are dropped with the endpoint and its delivery log.',
      params: WebhookParams,
      response: { 204: z.null().meta({ description: 'Removed' }) },
    },
    handler: async (request, reply) => {
      await deleteWebhook(services, worldOfAuth(authOf(request)), request.params.id);
      return reply.code(204).send(null);
    },
  });

  api.post('/v1/webhooks/:id/test', {
    config: { scope: 'admin', audit: { action: 'webhook.test', resourceType: 'webhook_endpoint' } },
    schema: {
      tags,
      summary: 'Send a test event',
      description:
        'Sends a realistic but fictional payload of the chosen event (no intake is touched), signed like a real one, and answers with the attempt as logged. One attempt, no retries.',
      params: WebhookParams,
      body: TestWebhookBody,
      response: { 200: DeliveryAttempt },
    },
    handler: async (request) => {
      return sendTestEvent(services, worldOfAuth(authOf(request)), request.params.id, request.body.event);
    },
  });

  api.get('/v1/webhooks/:id/deliveries', {
    config: { scope: 'admin' },
    schema: {
      tags,
      summary: 'Delivery log of an endpoint',
      description:
        'Every attempt, newest first, with its response status, duration, the first 4 KiB of the response, the next attempt time and the delivery state. Cursor pagination: limit, starting_after, has_more.',
      params: WebhookParams,
      querystring: DeliveriesQuery,
      response: { 200: DeliveryPage },
    },
    handler: async (request) =>
      listDeliveries(services, worldOfAuth(authOf(request)), request.params.id, request.query),
  });

  api.post('/v1/webhooks/:id/rotate_secret', {
    config: { scope: 'admin', audit: { action: 'webhook.rotate_secret', resourceType: 'webhook_endpoint' } },
    schema: {
      tags,
      summary: 'Rotate the signing secret',
      description:
        'The new secret is in this response only. For 24 hours both secrets sign every request (two v1 entries in the signature header), so receivers can switch without losing events.',
      params: WebhookParams,
      body: RotateSecretBody,
      response: { 200: RotatedWebhookSecret },
    },
    handler: async (request) => {
      return rotateSecret(services, worldOfAuth(authOf(request)), request.params.id, request.body?.secret);
    },
  });
}
