export const SCOPES = ['admin', 'intakes:read', 'intakes:write', 'secrets:read'] as const;
export type Scope = (typeof SCOPES)[number];

/** admin includes every other scope. */
export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes('admin') || granted.includes(needed);
}

/** A key may hand out only scopes it holds itself (admin holds all). */
export function scopesNotHeld(creator: readonly string[], requested: readonly string[]): string[] {
  if (creator.includes('admin')) return [];
  return requested.filter((scope) => !creator.includes(scope));
}
