import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { authOf } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { listAuditEntries, type AuditRow } from './audit.repository.js';
import type { AuditEntry } from './audit.schemas.js';
import { AuditPage, AuditQuery } from './audit.schemas.js';

function toAuditEntry(row: AuditRow): z.infer<typeof AuditEntry> {
  return {
    id: row.id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    actor: { type: row.actor_type as z.infer<typeof AuditEntry>['actor']['type'], id: row.actor_id },
    person_id: row.person_id ?? (row.actor_type === 'user' ? row.actor_id : null),
    request_id: row.request_id,
    created_at: row.created_at,
  };
}

export function auditRoutes(app: FastifyInstance, services: AppServices): void {
  app.withTypeProvider<ZodTypeProvider>().get('/v1/audit', {
    config: { scope: 'admin' },
    schema: {
      tags: ['Account'],
      summary: 'Audit log of API and user actions',
      description: 'Every mutating call, newest first, with cursor pagination (limit, starting_after).',
      querystring: AuditQuery,
      response: { 200: AuditPage },
    },
    handler: async (request) => {
      const auth = authOf(request);
      const { limit, starting_after } = request.query;
      const { rows, cursorFound } = await listAuditEntries(
        services.db.kysely,
        { accountId: auth.account.id, livemode: auth.livemode ? 1 : 0 },
        { limit, startingAfter: starting_after },
      );
      if (!cursorFound) {
        throw new ApiError(
          'invalid_request',
          `starting_after: no audit entry with id ${starting_after ?? ''}.`,
        );
      }
      return { entries: rows.slice(0, limit).map(toAuditEntry), has_more: rows.length > limit };
    },
  });
}
