import { describe, expect, it } from 'vitest';
import {
  dashboardAllows,
  dashboardPermission,
  effectiveScopes,
  grantableScopes,
  ownershipProblem,
  roleAllows,
  ROLES,
  scopesOfRole,
} from './roles.js';

describe('effectiveScopes: a key never holds more than its person’s role', () => {
  it('keeps every scope for a key with no person (the account holder’s own) and for owners and admins', () => {
    expect(effectiveScopes(['admin'], null)).toEqual(['admin']);
    expect(effectiveScopes(['admin'], 'owner')).toEqual(['admin']);
    expect(effectiveScopes(['intakes:read', 'secrets:read'], 'admin')).toEqual([
      'intakes:read',
      'secrets:read',
    ]);
  });
  it('narrows an admin key to what a member or viewer may do', () => {
    expect(effectiveScopes(['admin'], 'member')).toEqual(['intakes:read', 'intakes:write', 'secrets:read']);
    expect(effectiveScopes(['admin'], 'viewer')).toEqual(['intakes:read']);
    expect(effectiveScopes(['intakes:write', 'secrets:read'], 'viewer')).toEqual([]);
    expect(effectiveScopes(['intakes:read', 'intakes:write'], 'member')).toEqual([
      'intakes:read',
      'intakes:write',
    ]);
  });
  it('gives the dashboard the scopes of the role', () => {
    expect(scopesOfRole('owner')).toEqual(['admin']);
    expect(scopesOfRole('viewer')).toEqual(['intakes:read']);
  });
});

describe('dashboardPermission and roleAllows', () => {
  const cases: [string, string, 'read' | 'write' | 'secrets' | 'manage' | 'billing'][] = [
    ['GET', '/dashboard/intakes', 'read'],
    ['GET', '/dashboard/intakes/:id', 'read'],
    ['GET', '/dashboard/intakes/:id/preview', 'read'],
    ['GET', '/dashboard/intakes/new', 'write'],
    ['GET', '/dashboard/intakes/:id/edit', 'write'],
    ['GET', '/dashboard/intakes/in_abc/edit', 'write'],
    ['GET', '/dashboard/templates/new', 'write'],
    ['GET', '/dashboard/templates', 'read'],
    ['GET', '/dashboard/keys', 'manage'],
    ['GET', '/dashboard/webhooks/:id', 'manage'],
    ['GET', '/dashboard/members', 'manage'],
    ['POST', '/dashboard/intakes', 'write'],
    ['POST', '/dashboard/intakes/:id/items/:key/approve', 'write'],
    ['POST', '/dashboard/intakes/:id/items/:key/reveal', 'secrets'],
    ['POST', '/dashboard/keys', 'manage'],
    ['POST', '/dashboard/members/:id/remove', 'manage'],
    ['POST', '/dashboard/settings', 'manage'],
    ['POST', '/dashboard/settings/notifications', 'read'],
    ['POST', '/dashboard/mode', 'read'],
    ['POST', '/dashboard/billing/checkout', 'billing'],
  ];
  it.each(cases)('%s %s needs %s', (method, route, permission) => {
    expect(dashboardPermission(method, route)).toBe(permission);
  });

  it('gives each role exactly its permissions', () => {
    const table = Object.fromEntries(
      ROLES.map((role) => [
        role,
        (['read', 'write', 'secrets', 'manage', 'billing'] as const).filter((p) => roleAllows(role, p)),
      ]),
    );
    expect(table).toEqual({
      owner: ['read', 'write', 'secrets', 'manage', 'billing'],
      admin: ['read', 'write', 'secrets', 'manage'],
      member: ['read', 'write', 'secrets'],
      viewer: ['read'],
    });
  });
});

describe('ownershipProblem: exactly one owner, handed over by the owner', () => {
  it('refuses removing or demoting the owner', () => {
    expect(ownershipProblem({ actorRole: 'owner', targetRole: 'owner', newRole: 'removed' })?.code).toBe(
      'conflict',
    );
    expect(ownershipProblem({ actorRole: 'admin', targetRole: 'owner', newRole: 'admin' })?.code).toBe(
      'conflict',
    );
  });
  it('lets only the owner (or the account holder’s own key) hand ownership over', () => {
    expect(ownershipProblem({ actorRole: 'admin', targetRole: 'admin', newRole: 'owner' })?.code).toBe(
      'forbidden',
    );
    expect(ownershipProblem({ actorRole: 'owner', targetRole: 'admin', newRole: 'owner' })).toBeNull();
    expect(ownershipProblem({ actorRole: null, targetRole: 'viewer', newRole: 'owner' })).toBeNull();
  });
  it('lets an admin change and remove everyone but the owner', () => {
    expect(ownershipProblem({ actorRole: 'admin', targetRole: 'member', newRole: 'viewer' })).toBeNull();
    expect(ownershipProblem({ actorRole: 'admin', targetRole: 'admin', newRole: 'removed' })).toBeNull();
  });
});

describe('dashboardAllows: what pages show is what the server lets through', () => {
  it('lets anyone switch accounts, and hides review, settings and billing actions by role', () => {
    for (const role of ROLES) expect(dashboardAllows(role, 'POST', '/dashboard/accounts/switch')).toBe(true);
    const approve = '/dashboard/intakes/int_1/items/logo/approve';
    expect(ROLES.filter((role) => dashboardAllows(role, 'POST', approve))).toEqual([
      'owner',
      'admin',
      'member',
    ]);
    expect(ROLES.filter((role) => dashboardAllows(role, 'POST', '/dashboard/settings'))).toEqual([
      'owner',
      'admin',
    ]);
    expect(ROLES.filter((role) => dashboardAllows(role, 'POST', '/dashboard/billing/checkout'))).toEqual([
      'owner',
    ]);
  });
});

describe('grantableScopes: an agent never gets more than its person may give', () => {
  it('offers each role its own scopes', () => {
    expect(grantableScopes('owner')).toEqual(['admin', 'intakes:read', 'intakes:write', 'secrets:read']);
    expect(grantableScopes('admin')).toEqual(grantableScopes('owner'));
    expect(grantableScopes('member')).toEqual(['intakes:read', 'intakes:write', 'secrets:read']);
    expect(grantableScopes('viewer')).toEqual(['intakes:read']);
    expect(grantableScopes('someone')).toEqual(['intakes:read']);
  });
});
