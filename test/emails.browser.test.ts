import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPPORTED_LANGUAGES } from '../src/i18n/index.js';
import { EMAIL_TEMPLATES, renderEmail, type MessageContext } from '../src/modules/notify/notify.templates.js';
import { ARTIFACTS, chromiumAvailable, launchChromium } from './helpers/browser.js';
import { png } from './helpers/images.js';

/**
 * Every client email in every language, rendered in chromium as a phone (360 px) and a desktop
 * (1280 px) would show it: nothing wider than the screen (long links wrap), the button in view
 * before the list, the sender's colour on it. Screenshots go to artifacts/ for people to look at.
 */
const available = chromiumAvailable('email rendering browser tests');

const LONG_ID = `in_${'4kQvZ8mT2xR9pLw3nB7cYdE5fHj'.repeat(2)}`;

async function context(language: string): Promise<MessageContext> {
  return {
    language,
    accountName: 'Fjord Studio',
    projectName: 'Bakery Müller website relaunch and Donaudampfschifffahrtsgesellschaftskapitän',
    clientName: 'Dana',
    portalUrl: `https://app.example.com/portal/${LONG_ID}`,
    optOutUrl: `https://app.example.com/optout/${LONG_ID}?sig=${'9f8e7d6c5b4a3928'.repeat(4)}`,
    dueDate: '2026-12-15',
    outstanding: [
      { label: 'Logo (vector)', required: true, note: null, owed: true },
      {
        label: 'About your company',
        required: true,
        note: 'Please add the year you opened: https://example.com/a/very/long/reference/without/any/spaces/at/all',
        owed: true,
      },
      { label: 'Opening hours', required: true, note: null, owed: true, saved: true },
      { label: 'Instagram', required: false, note: null, owed: false },
    ],
    revision: {
      itemLabel: 'About your company',
      note: 'Please add the year you opened: https://example.com/a/very/long/reference/without/any/spaces/at/all',
    },
    branding: {
      logoUrl: `data:image/png;base64,${(await png(240, 60)).toString('base64')}`,
      accentColor: '#0f766e',
    },
  };
}

describe.skipIf(!available)('client emails in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());

  it('fit a 360 px phone in every language, the button first and in the sender’s colour', async () => {
    expect(SUPPORTED_LANGUAGES).toEqual(['de', 'en', 'es', 'fr', 'nl']);
    // One page per width, each email loaded into it in turn (as a mail client's preview pane would).
    const pages = new Map<number, Page>();
    for (const width of [360, 1280])
      pages.set(width, await browser.newPage({ viewport: { width, height: 740 } }));
    for (const language of SUPPORTED_LANGUAGES) {
      const ctx = await context(language);
      for (const template of EMAIL_TEMPLATES) {
        const email = renderEmail(template, ctx);
        for (const [width, page] of pages) {
          await page.setContent(email.html, { waitUntil: 'load' });
          // The bulletproof button: the link inside the cell that carries the colour.
          const button = page.locator('td[bgcolor] > a').first();
          const box = await button.boundingBox();
          const lists = page.locator('ul');
          const list = (await lists.count()) > 0 ? await lists.first().boundingBox() : null;
          const facts = {
            scrollWidth: await page.evaluate<number>('document.documentElement.scrollWidth'),
            buttonTop: box?.y ?? -1,
            buttonRight: box ? box.x + box.width : -1,
            listTop: list?.y ?? null,
            buttonColour: await page.evaluate<string>(
              "getComputedStyle(document.querySelector('td[bgcolor]')).backgroundColor",
            ),
          };
          const where = `${language} ${template} at ${width} px`;
          expect(facts.scrollWidth, where).toBeLessThanOrEqual(width);
          expect(facts.buttonRight, where).toBeLessThanOrEqual(width);
          expect(box, where).not.toBeNull();
          if (facts.listTop !== null) expect(facts.buttonTop, where).toBeLessThan(facts.listTop);
          expect(facts.buttonColour, where).toBe('rgb(15, 118, 110)');
          // Pictures for people to look at: English at both widths, and German (the longest words)
          // on the phone.
          if (language === 'en' || (language === 'de' && width === 360)) {
            await page.screenshot({
              path: join(ARTIFACTS, `email-${template}-${language}-${width}.png`),
              fullPage: true,
            });
          }
        }
      }
    }
    for (const page of pages.values()) await page.close();
  }, 120_000);
});
