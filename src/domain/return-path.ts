/**
 * Where a browser may be sent back to after a step (sign-in, a mode switch, a plan change): a path of
 * this site, never another origin. The one validator for every `return_to` and every dashboard redirect.
 *
 * Browsers forgive a lot in a `Location` header: they drop tabs and newlines (`/\t/evil` becomes
 * `//evil`, another host), treat `\` as `/`, and accept a scheme-relative `//host`. So the rule is an
 * allowlist, not a denylist: a single leading `/` followed by the characters of an already
 * percent-encoded path, query and fragment (RFC 3986 unreserved, sub-delims, `:@/?#%`), nothing
 * else: no whitespace or control character, no backslash, no raw non-ASCII.
 */
const RETURN_PATH = /^\/(?![/\\])[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%]*$/;
export const RETURN_PATH_MAX_LENGTH = 500;

/** `value` when it is a safe path of this site to return to, else null. */
export function safeReturnPath(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > RETURN_PATH_MAX_LENGTH) return null;
  if (!RETURN_PATH.test(value)) return null;
  // Every `%` starts a valid escape, so no decoder downstream sees a broken sequence.
  if (/%(?![0-9A-Fa-f]{2})/.test(value)) return null;
  // Belt and braces: resolved against any origin, the path stays on that origin.
  const base = 'https://return.invalid';
  if (new URL(value, base).origin !== base) return null;
  return value;
}
