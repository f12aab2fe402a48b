import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf, type AuthContext } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import type { AppServices } from '../../services.js';
import { InviteMemberBody, Member, MemberList, MemberParams, UpdateMemberBody } from './members.schemas.js';
import { changeMemberRole, inviteMember, listMembers, removeMember } from './members.service.js';

/** The team belongs to the account, not to a world: test keys (handed to development setups) cannot change it. */
function liveAuth(auth: AuthContext): AuthContext {
  if (!auth.livemode)
    throw new ApiError(
      'forbidden',
      'Members are managed with a live key (svc_live_…): the team is the account’s.',
    );
  return auth;
}

/** GET/POST /v1/members, PATCH/DELETE /v1/members/:id: the account's people and their roles. */
export function memberRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const db = services.db.kysely;
  const tags = ['Members'];

  api.get('/v1/members', {
    config: { scope: 'admin' },
    schema: {
      tags,
      summary: 'List members',
      description: 'The people who sign in to the dashboard, oldest first, with the seats used and allowed.',
      response: { 200: MemberList },
    },
    handler: (request) => listMembers(db, authOf(request)),
  });

  api.post('/v1/members', {
    config: { scope: 'admin', audit: { action: 'member.invite', resourceType: 'member' } },
    schema: {
      tags,
      summary: 'Invite a member',
      description:
        "Emails the person a one-time sign-in link; they are `invited` until they use it. 402 `plan_required` when the plan's seats are all taken (Free 1, Solo 3, Agency 10), 409 when the address is already one of the account's people (a person of another account is welcome: accepting adds this account to theirs). Live keys only.",
      body: InviteMemberBody,
      response: { 201: Member },
    },
    handler: async (request, reply) => {
      const member = await inviteMember(services, request.log, liveAuth(authOf(request)), request.body);
      request.auditResourceId = member.id;
      return reply.code(201).send(member);
    },
  });

  api.patch('/v1/members/:id', {
    config: { scope: 'admin', audit: { action: 'member.role_change', resourceType: 'member' } },
    schema: {
      tags,
      summary: "Change a member's role",
      description:
        "Takes effect on the member's next request, for their sessions and the keys they made. Setting `owner` hands ownership over (owner only; the previous owner becomes admin). The owner's own role changes only that way (409). Live keys only.",
      params: MemberParams,
      body: UpdateMemberBody,
      response: { 200: Member },
    },
    handler: (request) =>
      changeMemberRole(db, liveAuth(authOf(request)), request.params.id, request.body.role),
  });

  api.delete('/v1/members/:id', {
    config: { scope: 'admin', audit: { action: 'member.remove', resourceType: 'member' } },
    schema: {
      tags,
      summary: 'Remove a member',
      description:
        'Ends at once their dashboard sessions and sign-in links, the API keys they made, and the OAuth grants, refresh tokens and device sign-ins they approved. The owner cannot be removed (409). Live keys only.',
      params: MemberParams,
      response: { 204: z.null().meta({ description: 'Removed' }) },
    },
    handler: async (request, reply) => {
      await removeMember(db, liveAuth(authOf(request)), request.params.id);
      return reply.code(204).send(null);
    },
  });
}
