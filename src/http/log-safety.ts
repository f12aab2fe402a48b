import type { FastifyRequest } from 'fastify';

/**
 * URLs as they may appear in logs. An intake id is the client's portal capability and a file URL's
 * signature is a download grant: logs keep enough to correlate (the id's first characters), not to use.
 */
export function loggableUrl(url: string): string {
  // Every request's URL passes here (the access log): most hold neither, and skip both scans.
  let loggable = url;
  if (loggable.includes('_')) loggable = loggable.replace(/\b(int?_[0-9A-Za-z]{4})[0-9A-Za-z]{8,}/g, '$1…');
  if (loggable.includes('sig=')) loggable = loggable.replace(/([?&]sig=)[^&]*/g, '$1…');
  return loggable;
}

/** The request as pino logs it (Fastify's default fields, with a loggable URL). */
export function requestForLog(request: FastifyRequest) {
  return {
    method: request.method,
    url: loggableUrl(request.url),
    remoteAddress: request.ip,
  };
}
