import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { childEnv } from './helpers/env.js';

/**
 * MJML (about 14 MB resident) is loaded by the first email a process renders. An API process loads the
 * whole server, the job handlers' modules included, and renders none: it never pays for MJML.
 */
describe('MJML in a process of the compiled build', () => {
  it('is not loaded with the server, and is loaded by the first email rendered', () => {
    const dist = join(dirname(inject('builtBin')), '..', 'dist');
    const moduleUrl = (file: string) => JSON.stringify(pathToFileURL(join(dist, file)).href);
    const script = `
      import { createRequire } from 'node:module';
      const mjmlLoaded = () =>
        Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes('/node_modules/mjml'));
      await import(${moduleUrl('server.js')});
      const withServer = mjmlLoaded();
      const { emailLayout } = await import(${moduleUrl('modules/notify/email-layout.js')});
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
      console.log(JSON.stringify({ withServer, afterEmail: mjmlLoaded(), rendered: html.includes('One line.') }));
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: childEnv({ LOG_LEVEL: 'silent' }),
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const last = run.stdout.trim().split('\n').at(-1) ?? '';
    expect(JSON.parse(last)).toEqual({ withServer: false, afterEmail: true, rendered: true });
  });
});
