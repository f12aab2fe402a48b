import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { CreateKeyBody, CreatedApiKey, KeyIdParams, KeyList } from './keys.schemas.js';
import { createKeyAs, listKeysAs, revokeKeyAs } from './keys.service.js';

/** SPEC gives two path sets for keys; both are served with the same behaviour. */
const KEY_PATHS = ['/v1/keys', '/v1/auth/keys'] as const;

export function keyRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const db = services.db.kysely;

  for (const base of KEY_PATHS) {
    const alias = base === '/v1/auth/keys';
    const tags = ['API keys'];

    api.post(base, {
      config: { scope: 'admin', audit: { action: 'api_key.create', resourceType: 'api_key' } },
      schema: {
        tags,
        summary: 'Create an API key',
        operationId: alias ? 'createKeyAuthPath' : 'createKey',
        description: 'The secret `key` is in this response only; it is stored as a hash.',
        body: CreateKeyBody,
        response: { 201: CreatedApiKey },
      },
      handler: async (request, reply) => {
        const created = await createKeyAs(db, authOf(request), request.body);
        request.auditResourceId = created.id;
        return reply.code(201).send(created);
      },
    });

    api.get(base, {
      config: { scope: 'admin' },
      schema: {
        tags,
        summary: 'List API keys',
        operationId: alias ? 'listKeysAuthPath' : 'listKeys',
        description: 'Active keys, newest first, without secrets. Test keys see only test keys.',
        response: { 200: KeyList },
      },
      handler: async (request) => ({ keys: await listKeysAs(db, authOf(request)) }),
    });

    api.delete(`${base}/:id`, {
      config: { scope: 'admin', audit: { action: 'api_key.revoke', resourceType: 'api_key' } },
      schema: {
        tags,
        summary: 'Revoke an API key',
        operationId: alias ? 'revokeKeyAuthPath' : 'revokeKey',
        description: 'The key is refused (401) from its next request on.',
        params: KeyIdParams,
        response: { 204: z.null().meta({ description: 'Revoked' }) },
      },
      handler: async (request, reply) => {
        await revokeKeyAs(db, authOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    });
  }
}
