import { createHmac } from 'node:crypto';
import { deriveKey } from '../../lib/crypto.js';
import { constantTimeEqual } from '../../lib/secrets.js';

/** Signed file URLs are valid for 24 hours from issue (SPEC, CONTRACT "Signed file URLs"). */
export const FILE_URL_TTL_SECONDS = 24 * 60 * 60;

const EXPIRES = /^[0-9]{1,12}$/;
const SIGNATURE = /^[0-9a-f]{64}$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function signature(secretKey: string, fileId: string, expires: number): string {
  return createHmac('sha256', deriveKey(secretKey, 'file-urls')).update(`${fileId}.${expires}`).digest('hex');
}

/**
 * `{baseUrl}/files/{fileId}?expires=<unix seconds>&sig=<hex>`: the signature binds the file id and
 * the expiry, keyed with a key derived from SECRET_KEY for this purpose only.
 */
export function signFileUrl(
  baseUrl: string,
  secretKey: string,
  fileId: string,
  nowMs: number,
): { url: string; expires_at: string } {
  const expires = Math.floor(nowMs / 1000) + FILE_URL_TTL_SECONDS;
  const sig = signature(secretKey, fileId, expires);
  return {
    url: `${baseUrl.replace(/\/+$/, '')}/files/${encodeURIComponent(fileId)}?expires=${expires}&sig=${sig}`,
    expires_at: new Date(expires * 1000).toISOString(),
  };
}

/** True only for a well-formed, unexpired signature over this file id and expiry. */
export function verifyFileSignature(
  secretKey: string,
  fileId: string,
  expires: string | undefined,
  sig: string | undefined,
  nowMs: number,
): boolean {
  if (expires === undefined || sig === undefined) return false;
  if (!EXPIRES.test(expires) || !SIGNATURE.test(sig)) return false;
  const expiresAt = Number(expires);
  if (expiresAt * 1000 <= nowMs) return false;
  return constantTimeEqual(signature(secretKey, fileId, expiresAt), sig);
}

/**
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>` (RFC 6266 / 8187):
 * old clients read the plain form, every current one the UTF-8 form. The fallback keeps printable
 * ASCII except quote, backslash and percent, so the header can never be broken out of.
 */
export function attachmentDisposition(rawName: string): string {
  const name = rawName.replace(LONE_SURROGATE, '\ufffd');
  const fallback =
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^\x20-\x7e]|["\\%]/g, '_')
      .trim() || 'download';
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
