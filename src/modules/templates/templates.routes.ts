import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { worldOfAuth } from '../../kernel/world.js';
import {
  CreateTemplateBody,
  Template,
  TemplateList,
  TemplateListQuery,
  TemplateParams,
  UpdateTemplateBody,
} from './templates.schemas.js';
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplatePage,
  updateTemplate,
} from './templates.service.js';

export function templateRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const db = services.db.kysely;
  const tags = ['Templates'];

  api.post('/v1/templates', {
    config: { scope: 'intakes:write', audit: { action: 'template.create', resourceType: 'template' } },
    schema: {
      tags,
      summary: 'Create a template',
      description:
        "A world (account and mode) keeps at most its plan's `max_templates` (see /pricing.json): 402 plan_required beyond it.",
      body: CreateTemplateBody,
      response: { 201: Template },
    },
    handler: async (request, reply) => {
      const template = await createTemplate(
        db,
        worldOfAuth(authOf(request)),
        request.body,
        services.db.dialect,
      );
      request.auditResourceId = template.id;
      return reply.code(201).send(template);
    },
  });

  api.get('/v1/templates', {
    config: { scope: 'intakes:read' },
    schema: {
      tags,
      summary: 'List templates',
      description:
        'Newest first, with cursor pagination (limit, default 20, at most 100; starting_after; has_more).',
      querystring: TemplateListQuery,
      response: { 200: TemplateList },
    },
    handler: (request) => listTemplatePage(db, worldOfAuth(authOf(request)), request.query),
  });

  api.get('/v1/templates/:id', {
    config: { scope: 'intakes:read' },
    schema: { tags, summary: 'Get a template', params: TemplateParams, response: { 200: Template } },
    handler: (request) => getTemplate(db, worldOfAuth(authOf(request)), request.params.id),
  });

  api.patch('/v1/templates/:id', {
    config: { scope: 'intakes:write', audit: { action: 'template.update', resourceType: 'template' } },
    schema: {
      tags,
      summary: 'Change a template',
      description: 'A new name, a new item list, or both. Intakes already created from it keep their items.',
      params: TemplateParams,
      body: UpdateTemplateBody,
      response: { 200: Template },
    },
    handler: (request) => {
      return updateTemplate(db, worldOfAuth(authOf(request)), request.params.id, request.body);
    },
  });

  api.delete('/v1/templates/:id', {
    config: { scope: 'intakes:write', audit: { action: 'template.delete', resourceType: 'template' } },
    schema: {
      tags,
      summary: 'Delete a template',
      description: 'Intakes already created from it keep their items.',
      params: TemplateParams,
      response: { 204: z.null().meta({ description: 'Deleted' }) },
    },
    handler: async (request, reply) => {
      await deleteTemplate(db, worldOfAuth(authOf(request)), request.params.id);
      return reply.code(204).send(null);
    },
  });
}
