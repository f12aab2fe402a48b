import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { loadSharp } from '../files/images.js';

/** The service's mark: a rounded square in the accent colour with a check, as the pages show it. */
const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2450c8"/><path d="M9 16.5l4.5 4.5L23 11.5" fill="none" stroke="#fff" stroke-width="3.2" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

/**
 * An .ico file holding one 32×32 PNG (the format allows PNG images since Windows Vista, and every
 * browser reads it): a six-byte header, one sixteen-byte directory entry, then the PNG.
 */
async function iconFile(): Promise<Buffer> {
  const png = await (await loadSharp())(Buffer.from(ICON_SVG)).resize(32, 32).png().toBuffer();
  const header = Buffer.alloc(22);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(1, 4); // one image
  header.writeUInt8(32, 6); // width
  header.writeUInt8(32, 7); // height
  header.writeUInt8(0, 8); // no palette
  header.writeUInt8(0, 9); // reserved
  header.writeUInt16LE(1, 10); // colour planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(png.length, 14); // image size
  header.writeUInt32LE(22, 18); // image offset
  return Buffer.concat([header, png]);
}

function wantsPage(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

/**
 * The site's root: a browser that opens the service's address lands on the dashboard (API clients keep
 * the JSON 404 they had), and /favicon.ico answers, so no page logs a failed request for it.
 */
export function siteRoutes(app: FastifyInstance): void {
  let icon: Promise<Buffer> | undefined;

  app.get('/', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    if (!wantsPage(request)) return reply.callNotFound();
    return reply.redirect('/dashboard', 303);
  });

  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) => {
    // Made once per process; a failure is not kept, so the next request tries again.
    icon ??= iconFile().catch((error: unknown) => {
      icon = undefined;
      throw error;
    });
    return reply
      .header('content-type', 'image/x-icon')
      .header('cache-control', 'public, max-age=86400')
      .send(await icon);
  });
}
