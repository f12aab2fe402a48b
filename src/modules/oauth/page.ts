import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Html, html } from '../portal/page/html.js';

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
main{max-width:34rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002}
h1{font-size:1.4rem;margin-top:0}
fieldset{border:1px solid #d0d5dd;border-radius:8px;margin:1rem 0;padding:.75rem 1rem}
label{display:block;margin:.35rem 0}
.code{font:600 1.6rem ui-monospace,monospace;letter-spacing:.15em}
.muted{color:#555;font-size:.9rem}
.actions{display:flex;gap:.75rem;margin-top:1.25rem}
button{font:inherit;padding:.6rem 1.2rem;border-radius:8px;border:1px solid #1f4fd1;background:#1f4fd1;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1f4fd1}
input[type=text]{font:inherit;padding:.5rem;border:1px solid #98a2b3;border-radius:6px}
.error{color:#b42318}
`;

/**
 * The small server-rendered pages of billing and agent sign-in (local checkout, device approval,
 * OAuth consent): no script, one inline style allowed by nonce, never framed (a consent page inside
 * another site's frame could be clicked through).
 */
export function sendPage(reply: FastifyReply, title: string, body: Html, status = 200): FastifyReply {
  const nonce = randomBytes(16).toString('base64');
  const page = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title}</title>
        <style nonce="${nonce}">
          ${new Html(STYLE)}
        </style>
      </head>
      <body>
        <main>${body}</main>
      </body>
    </html>`;
  return reply
    .code(status)
    .headers({
      'Content-Type': 'text/html; charset=utf-8',
      // form-action is left open: the consent form's answer redirects to the client's redirect URI.
      'Content-Security-Policy': `default-src 'none'; style-src 'nonce-${nonce}'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'`,
      'X-Frame-Options': 'DENY',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    })
    .send(page.value);
}

/**
 * HTML forms (and OAuth token requests, which RFC 6749 sends form-encoded) in this plugin context:
 * a flat record of strings. Skipped when the app already parses forms (@fastify/formbody).
 */
export function acceptForms(app: FastifyInstance): void {
  if (app.hasContentTypeParser('application/x-www-form-urlencoded')) return;
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 64 * 1024 },
    (_request, body, done) => {
      const record: Record<string, string | string[]> = {};
      for (const [name, value] of new URLSearchParams(body.toString())) {
        const seen = record[name];
        record[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
      }
      done(null, record);
    },
  );
}

/** A form field as one string ('' when absent or repeated oddly). */
export function field(body: unknown, name: string): string {
  if (!body || typeof body !== 'object') return '';
  const value = (body as Record<string, unknown>)[name];
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  return '';
}

/** Every value of a repeated form field (checkboxes). */
export function fields(body: unknown, name: string): string[] {
  if (!body || typeof body !== 'object') return [];
  const value = (body as Record<string, unknown>)[name];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}
