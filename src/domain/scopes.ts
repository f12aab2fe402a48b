export const SCOPES = ['admin', 'intakes:read', 'intakes:write', 'secrets:read'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What an agent asks for by default and what the sign-in pages tick first: the everyday work of the
 * agent tools, least privilege. admin and secrets:read are granted only when a person ticks them.
 */
export const AGENT_SCOPES = ['intakes:read', 'intakes:write'] as const satisfies readonly Scope[];

/** The scopes OAuth metadata advertises to agents: every scope but admin (still grantable by hand). */
export const ADVERTISED_SCOPES = SCOPES.filter((scope) => scope !== 'admin');

/** admin includes every other scope. */
export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes('admin') || granted.includes(needed);
}

/** A key may hand out only scopes it holds itself (admin holds all). */
export function scopesNotHeld(creator: readonly string[], requested: readonly string[]): string[] {
  if (creator.includes('admin')) return [];
  return requested.filter((scope) => !creator.includes(scope));
}
