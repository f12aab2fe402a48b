/**
 * Team roles: what each person of an account may do, as API scopes and as dashboard permissions.
 * Pure rules; the API's key lookup, the dashboard's pages and the members service all read them here.
 */
import { SCOPES, type Scope } from './scopes.js';

export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/**
 * The API scopes a role allows. `admin` is everything (billing and ownership aside, which need the
 * owner themself); `member` creates, sends and reviews intakes (secret answers included) but manages no
 * keys, webhooks, billing or members; `viewer` reads.
 */
export const ROLE_SCOPES: Readonly<Record<Role, readonly Scope[]>> = {
  owner: ['admin'],
  admin: ['admin'],
  member: ['intakes:read', 'intakes:write', 'secrets:read'],
  viewer: ['intakes:read'],
};

/**
 * The scopes a key holds in effect: its own, never more than its person's role allows. A key recorded
 * with no person (the account's first keys, made by the CLI) acts for the account holder.
 */
export function effectiveScopes(keyScopes: readonly string[], role: Role | null): string[] {
  if (role === null) return [...keyScopes];
  const allowed = ROLE_SCOPES[role];
  if (allowed.includes('admin')) return [...keyScopes];
  if (keyScopes.includes('admin')) return [...allowed];
  return keyScopes.filter((scope) => (allowed as readonly string[]).includes(scope));
}

/** What a dashboard request needs: reading, changing intakes, reading secrets, managing, billing. */
export type Permission = 'read' | 'write' | 'secrets' | 'manage' | 'billing';

export function roleAllows(role: Role, permission: Permission): boolean {
  switch (permission) {
    case 'read':
      return true;
    case 'write':
    case 'secrets':
      return role !== 'viewer';
    case 'manage':
      return role === 'owner' || role === 'admin';
    case 'billing':
      return role === 'owner';
  }
}

/**
 * The scopes a person of this role may give an agent (the OAuth consent and device pages): never more
 * than the role itself holds. An unknown role string is read as the narrowest role.
 */
export function grantableScopes(role: string): Scope[] {
  const allowed = ROLE_SCOPES[isRole(role) ? role : 'viewer'];
  return allowed.includes('admin') ? [...SCOPES] : SCOPES.filter((scope) => allowed.includes(scope));
}

/** The API scopes of a role, for the dashboard's own calls into the services. */
export function scopesOfRole(role: Role): Scope[] {
  const allowed = ROLE_SCOPES[role];
  return allowed.includes('admin') ? ['admin'] : SCOPES.filter((scope) => allowed.includes(scope));
}

/**
 * The permission a dashboard route needs, from its method and route pattern (or a concrete path: the
 * patterns only test fixed parts). Reading is open to every role, but for the builder's pages (a new
 * intake or template, an intake's edit page); a POST changes intakes unless it is listed here. Pages
 * of keys, webhooks and members are for those who manage them; a person's own notification choice,
 * the live/test switch and the account switcher are anyone's.
 */
export function dashboardPermission(method: string, route: string): Permission {
  if (route.startsWith('/dashboard/billing')) return 'billing';
  const managed = /^\/dashboard\/(keys|webhooks|members)(\/|$)/.test(route);
  if (method === 'GET' || method === 'HEAD') {
    if (managed) return 'manage';
    // The builder's pages are forms whose only use is to write: a role that may not is told on opening them.
    return /^\/dashboard\/(intakes\/new|intakes\/[^/]+\/edit|templates\/new)\/?$/.test(route)
      ? 'write'
      : 'read';
  }
  if (
    route === '/dashboard/mode' ||
    route === '/dashboard/settings/notifications' ||
    route === '/dashboard/accounts/switch'
  ) {
    return 'read';
  }
  if (managed || route.startsWith('/dashboard/settings')) return 'manage';
  if (/\/reveal$/.test(route)) return 'secrets';
  return 'write';
}

/**
 * Whether a role may use a dashboard route: the server's check (403 otherwise) and what the pages show.
 * Pages hide a button or form with this same rule, so what a person sees is what they may do.
 */
export function dashboardAllows(role: Role, method: string, route: string): boolean {
  return roleAllows(role, dashboardPermission(method, route));
}

/** Why a role change or removal is refused: the account keeps exactly one owner, chosen by the owner. */
export interface OwnershipProblem {
  code: 'conflict' | 'forbidden';
  message: string;
}

/**
 * A role change or removal must leave the account exactly one owner, and only the owner hands
 * ownership over. `actorRole` null: a key of the account holder's own (acts as the owner).
 */
export function ownershipProblem(change: {
  actorRole: Role | null;
  targetRole: Role;
  newRole: Role | 'removed';
}): OwnershipProblem | null {
  const actorIsOwner = change.actorRole === null || change.actorRole === 'owner';
  if (change.targetRole === 'owner' && change.newRole === 'removed') {
    return {
      code: 'conflict',
      message:
        'The owner cannot be removed: hand ownership to another member first (PATCH their role to owner).',
    };
  }
  if (change.targetRole === 'owner' && change.newRole !== 'owner') {
    return {
      code: 'conflict',
      message: 'The owner keeps that role until ownership goes to another member (set their role to owner).',
    };
  }
  if (change.newRole === 'owner' && !actorIsOwner) {
    return { code: 'forbidden', message: 'Only the owner can hand ownership over.' };
  }
  return null;
}
