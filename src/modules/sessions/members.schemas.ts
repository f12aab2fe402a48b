import { z } from 'zod';
import { ROLES } from '../../domain/roles.js';
import { Timestamp, optional } from '../../http/schemas.js';

const RoleField = z.enum(ROLES).meta({
  description:
    'owner: the account holder (exactly one; hand it over by giving another member this role). admin: everything but billing and ownership. member: create, send and review intakes; no keys, webhooks, billing or members. viewer: read only.',
});

export const Member = z
  .object({
    id: z.string().meta({ description: 'mem_… (people who joined before teams keep their usr_… id)' }),
    email: z.string(),
    name: z.string().nullable(),
    role: RoleField,
    status: z.enum(['invited', 'active']).meta({ description: 'invited until the first sign-in' }),
    created_at: Timestamp,
    last_signed_in_at: Timestamp.nullable(),
  })
  .meta({ id: 'Member' });

export const MemberList = z
  .object({
    members: z.array(Member),
    seats: z.object({ used: z.number().int(), limit: z.number().int() }).meta({
      description: "Members (invited or active) and the plan's seat limit",
    }),
  })
  .meta({ id: 'MemberList' });

export const InviteMemberBody = z
  .strictObject({
    email: z.email().max(254).meta({ description: 'Where the invitation (a one-time sign-in link) goes' }),
    name: optional(z.string().trim().min(1).max(100)),
    role: z.enum(['admin', 'member', 'viewer']).meta({
      description: 'owner is not invited: give an existing member that role to hand ownership over',
    }),
  })
  .meta({ id: 'InviteMember' });

export const UpdateMemberBody = z.strictObject({ role: RoleField }).meta({ id: 'UpdateMember' });

export const MemberParams = z.strictObject({ id: z.string().min(1).max(64) });
