/**
 * The account's team: its people, their roles and seats. A person is an `account_users` row (the
 * sessions module's table); the rules (which role may do what, one owner, seats per plan) are pure
 * functions in domain/roles.ts. Removing a person ends everything they could act with: their
 * sessions and sign-in links here, and, through the `memberRemoved` event, the API keys they made and
 * the OAuth grants and device sign-ins they approved.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { planOf } from '../../domain/plans.js';
import { isRole, ownershipProblem, type Role } from '../../domain/roles.js';
import type { AuthContext } from '../../http/auth.js';
import { ApiError, notFound } from '../../http/errors.js';
import { raise } from '../../kernel/domain-events.js';
import type { AppServices } from '../../services.js';
import { auditInTransaction } from '../audit/audit.scope.js';
import {
  countMembers,
  deleteMember,
  findMember,
  lockAccountSeats,
  membersWithRole,
  setRole,
} from './members.repository.js';
import type { InviteMemberBody, Member, MemberList } from './members.schemas.js';
import { listUsers, type UserRow } from './sessions.repository.js';
import { addInvitee, sendInvitation } from './sign-in.service.js';

declare module '../../kernel/domain-events.js' {
  interface DomainEventMap {
    /** A person left the account: whatever they made or approved stops working, in this transaction. */
    memberRemoved: { accountId: string; userId: string; at: string };
  }
}

export function toMember(row: UserRow): z.infer<typeof Member> {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: isRole(row.role) ? row.role : 'viewer',
    status: row.status === 'invited' ? 'invited' : 'active',
    created_at: row.created_at,
    last_signed_in_at: row.last_signed_in_at,
  };
}

/** The seats of the account's plan. */
export function seatLimit(plan: string): number {
  return planOf(plan).quotas.seats;
}

/** How many seats the account's people take (invited or active). */
export function seatsUsed(db: Kysely<Database>, accountId: string): Promise<number> {
  return countMembers(db, accountId);
}

export async function listMembers(
  db: Kysely<Database>,
  auth: AuthContext,
): Promise<z.infer<typeof MemberList>> {
  const rows = await listUsers(db, auth.account.id);
  return {
    members: rows.map(toMember),
    seats: { used: rows.length, limit: seatLimit(auth.account.plan) },
  };
}

/** The acting person's role; a key with no person acts for the account holder (owner). */
function actorRole(auth: AuthContext): Role | null {
  return auth.person?.role ?? null;
}

/**
 * Invites a person with a role: 402 `plan_required` past the plan's seats, 409 for an address already
 * in the account. The seats are counted under the account's lock, so two invitations at once cannot
 * both take the last seat; the email goes out after the commit.
 */
export async function inviteMember(
  services: AppServices,
  log: FastifyBaseLogger,
  auth: AuthContext,
  body: z.output<typeof InviteMemberBody>,
): Promise<z.infer<typeof Member>> {
  const db = services.db.kysely;
  const limit = seatLimit(auth.account.plan);
  const row = await db.transaction().execute(async (trx) => {
    await lockAccountSeats(trx, auth.account.id);
    if ((await countMembers(trx, auth.account.id)) >= limit) {
      throw new ApiError(
        'plan_required',
        `The ${planOf(auth.account.plan).name} plan has ${limit} seat${limit === 1 ? '' : 's'}, all taken: upgrade the plan or remove a member first.`,
        { seats: { limit } },
      );
    }
    return addInvitee(services, trx, { userId: auth.person?.id ?? null, accountId: auth.account.id }, body);
  });
  const inviterEmail = auth.person
    ? ((await findMember(db, auth.account.id, auth.person.id))?.email ?? auth.account.email)
    : auth.account.email;
  await sendInvitation(services, row, inviterEmail);
  return toMember(row);
}

/** Changes a role. Giving `owner` to another member hands ownership over (the old owner becomes admin). */
export async function changeMemberRole(
  db: Kysely<Database>,
  auth: AuthContext,
  id: string,
  role: Role,
): Promise<z.infer<typeof Member>> {
  return db.transaction().execute(async (trx) => {
    const target = await findMember(trx, auth.account.id, id);
    if (!target) throw notFound('member', id);
    const targetRole: Role = isRole(target.role) ? target.role : 'viewer';
    if (targetRole === role) return toMember(target);
    const problem = ownershipProblem({ actorRole: actorRole(auth), targetRole, newRole: role });
    if (problem) throw new ApiError(problem.code, problem.message);
    if (role === 'owner') {
      for (const owner of await membersWithRole(trx, auth.account.id, 'owner')) {
        await setRole(trx, auth.account.id, owner.id, 'admin');
      }
    }
    await setRole(trx, auth.account.id, id, role);
    await auditInTransaction(trx, id);
    return toMember({ ...target, role });
  });
}

/** Removes a person; their sessions, keys, OAuth grants and device sign-ins end in the same commit. */
export async function removeMember(db: Kysely<Database>, auth: AuthContext, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const target = await findMember(trx, auth.account.id, id);
    if (!target) throw notFound('member', id);
    const targetRole: Role = isRole(target.role) ? target.role : 'viewer';
    const problem = ownershipProblem({ actorRole: actorRole(auth), targetRole, newRole: 'removed' });
    if (problem) throw new ApiError(problem.code, problem.message);
    await deleteMember(trx, auth.account.id, id);
    await raise(trx, 'memberRemoved', {
      accountId: auth.account.id,
      userId: id,
      at: auth.clock.now().toISOString(),
    });
    await auditInTransaction(trx, id);
  });
}

/**
 * The role of a person of the account, or undefined when they are not (or no longer) one: what the
 * OAuth and device approvals read to cap the key they issue.
 */
export async function personRole(
  db: Kysely<Database>,
  accountId: string,
  userId: string,
): Promise<Role | undefined> {
  const row = await findMember(db, accountId, userId);
  if (!row) return undefined;
  return isRole(row.role) ? row.role : 'viewer';
}
