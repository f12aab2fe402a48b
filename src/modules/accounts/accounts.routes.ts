import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { Account, PatchAccountBody } from './accounts.schemas.js';
import { toAccount, updateAccount } from './accounts.service.js';
import { cachedBrandingSettingsOf } from './branding.js';

export function accountRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/v1/account', {
    config: { scope: 'any', keepBetweenCommits: true },
    schema: {
      tags: ['Account'],
      summary: 'Account info and current plan',
      response: { 200: Account },
    },
    handler: async (request) => {
      const auth = authOf(request);
      return toAccount(
        auth.account,
        auth.livemode,
        await cachedBrandingSettingsOf(services.db, auth.account.id),
      );
    },
  });

  api.patch('/v1/account', {
    config: { scope: 'admin', audit: { action: 'account.update', resourceType: 'account' } },
    schema: {
      tags: ['Account'],
      summary: 'Update account settings',
      body: PatchAccountBody,
      response: { 200: Account },
    },
    handler: async (request) => {
      const auth = authOf(request);
      return updateAccount(services.db.kysely, services.clock, auth, request.body);
    },
  });
}
