import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { childEnv } from './helpers/env.js';

/**
 * Libraries that only some processes use are loaded by their first use, not with the server: MJML
 * (about 14 MB resident) by the first email rendered, Stripe's by the first Stripe client, pg by the
 * first PostgreSQL connection, undici by the first webhook sent and the MCP SDK by the first POST /mcp.
 * An API process on SQLite without Stripe loads none of them until it needs one.
 *
 * Each check runs in a process of its own on the compiled build, and sees every package loaded either
 * way: through require (its cache) or through import (a resolve hook reports each one).
 */
const LAZY = ['mjml', 'stripe', 'pg', 'undici', '@modelcontextprotocol/sdk'];

function run(body: string): { before: string[]; after: string[] } {
  const dist = join(dirname(inject('builtBin')), '..', 'dist');
  const moduleUrl = (file: string) => JSON.stringify(pathToFileURL(join(dist, file)).href);
  const hooks = `
    let port;
    export function initialize(data) { port = data.port; }
    export async function resolve(specifier, context, next) {
      const resolved = await next(specifier, context);
      port.postMessage(resolved.url);
      return resolved;
    }`;
  const script = `
    import { createRequire, register } from 'node:module';
    import { MessageChannel } from 'node:worker_threads';
    const imported = new Set();
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (url) => imported.add(url));
    port1.unref();
    register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}), {
      data: { port: port2 },
      transferList: [port2],
    });
    const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
    const packages = async () => {
      await settle();
      const paths = [...Object.keys(createRequire(import.meta.url).cache), ...imported];
      return ${JSON.stringify(LAZY)}.filter((name) => paths.some((path) => path.includes('/node_modules/' + name + '/')));
    };
    await import(${moduleUrl('server.js')});
    const before = await packages();
    ${body.replaceAll('$DIST', dist)}
    console.log(JSON.stringify({ before, after: await packages() }));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: childEnv({ LOG_LEVEL: 'silent' }),
    timeout: 60_000,
  });
  expect(child.status, child.stderr).toBe(0);
  const last = child.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as { before: string[]; after: string[] };
}

describe('libraries loaded on first use, in a process of the compiled build', () => {
  it('loads none of them with the server, and each with its first use', () => {
    const { before, after } = run(`
      const { emailLayout } = await import('$DIST/modules/notify/email-layout.js');
      const { html } = emailLayout({
        language: 'en',
        subject: 'Subject',
        preheader: 'Preheader',
        branding: { accountName: 'Studio', logoUrl: null, accentColor: null },
        greeting: 'Hello,',
        blocks: [{ kind: 'paragraph', text: 'One line.' }],
        signature: ['Studio'],
        footer: [],
      });
      if (!html.includes('One line.')) throw new Error('the email did not render');
      const { stripeClient } = await import('$DIST/modules/billing/billing.stripe.js');
      const stripe = stripeClient({ secretKey: 'sk_test_lazy', webhookSecret: undefined, priceIds: {}, apiUrl: undefined });
      if (typeof stripe.webhooks.constructEvent !== 'function') throw new Error('no Stripe client');
      const { pgModule } = await import('$DIST/db/pg-module.js');
      if (typeof pgModule().Pool !== 'function') throw new Error('no pg');
      const { WebhookHttpClient } = await import('$DIST/modules/webhooks/delivery.js');
      const http = new WebhookHttpClient(() => true);
      const attempt = await http.send({
        url: 'http://127.0.0.1:9/', body: '{}', headers: {}, timeoutMs: 5000, shutdown: new AbortController().signal,
      });
      if (attempt.outcome !== 'failed') throw new Error('port 9 answered');
      await http.close();
    `);
    expect(before).toEqual([]);
    expect(after).toEqual(['mjml', 'stripe', 'pg', 'undici']);
  });
});
