import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';

/**
 * Input no part of the service can store: NUL characters. PostgreSQL text refuses them (a 500 deep in
 * a query), file systems and headers cut at them, and no legitimate name, id or answer holds one.
 * They are refused at the edge, in the URL and in JSON bodies, with a 400 that says so.
 */

/** A JSON text with a \u0000 escape that is not itself escaped (an odd run of backslashes before it). */
const JSON_NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/i;
const URL_NUL = /%00/;

export function jsonHasNul(text: string): boolean {
  return text.includes('\u0000') || JSON_NUL_ESCAPE.test(text);
}

export const nulRefused = (where: string) =>
  new ApiError('invalid_request', `NUL characters (\\u0000) are not allowed in the ${where}.`);

export function registerNulGuard(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    done(URL_NUL.test(request.url) ? nulRefused('URL') : undefined);
  });
}
