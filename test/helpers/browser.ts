import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { IN_CI } from './env.js';

/** Debian's chromium, which `.ci/run` installs when it is missing. */
export const CHROMIUM = '/usr/bin/chromium';

/** Screenshots of the browser tests (gitignored; CI keeps them as artifacts). */
export const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'artifacts');

/**
 * The README's pictures: retaken into docs/screenshots with UPDATE_SCREENSHOTS=1, otherwise written
 * with the artifacts, so an ordinary test run leaves the committed ones alone.
 */
export const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'screenshots')
    : join(ARTIFACTS, 'screenshots');

const AXE_SOURCE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown }[] }[];
}

/**
 * Whether the browser tests of `suite` can run. Outside CI a missing chromium skips them with a
 * message; with CI=true it fails the run, because CI must run everything.
 */
export function chromiumAvailable(suite: string): boolean {
  const available = existsSync(CHROMIUM);
  if (!available && IN_CI) {
    throw new Error(`${CHROMIUM} is missing, and CI=true forbids skipping the ${suite}.`);
  }
  if (!available) console.warn(`SKIPPED: ${suite} (${CHROMIUM} is not installed; apt-get install chromium).`);
  return available;
}

/** Headless, offline: Playwright gives every launch a fresh temporary --user-data-dir of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * The page's serious and critical accessibility problems by axe-core (WCAG 2.1 A and AA, plus any
 * extra rule tags), one line each: an empty list means none.
 */
export async function seriousAccessibilityProblems(page: Page, extraTags: string[] = []): Promise<string[]> {
  await page.evaluate(await readFile(AXE_SOURCE, 'utf8'));
  const runOnly = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', ...extraTags];
  const result = await page.evaluate(
    (tags) =>
      (globalThis as unknown as { axe: { run: (options: object) => Promise<AxeResult> } }).axe.run({
        runOnly: tags,
      }),
    runOnly,
  );
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} ${JSON.stringify(v.nodes.map((n) => n.target))}`);
}
