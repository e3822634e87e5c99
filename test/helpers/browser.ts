import { expect } from '@jest/globals';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type Page,
} from 'playwright-core';
import { BINARIES } from './system-binaries.js';

/**
 * For the hooks and tests that start a controller, a browser and an example: generous, because a
 * loaded 2-core machine can take a minute where an idle one takes seconds.
 */
export const BROWSER_TIMEOUT = 180_000;

/** Debian's chromium package (or SVC_CHROMIUM); `.ci/run` installs it when missing. */
export const CHROMIUM = BINARIES.chromium.path;

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set SVC_CHROMIUM)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    timeout: 60_000,
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

/** A phone-sized viewport: the pages must be readable there without zooming or scrolling sideways. */
export const PHONE = {
  viewport: { width: 375, height: 740 },
  deviceScaleFactor: 2,
  isMobile: true,
  hasTouch: true,
};

/** Screenshots of a suite go to artifacts/screenshots/<leg>/<suite>/ (gitignored; .ci/run prints where). */
export function screenshotDir(suite: string): string {
  const leg = process.env.TEST_DATABASE_URL ? 'postgresql' : 'pglite';
  const dir = resolve('artifacts', 'screenshots', leg, suite);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Screenshots so far per directory: the pages of one suite are numbered in the order taken. */
const shots = new Map<string, number>();

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** Screenshot of the whole page as NN-name.png. */
  shot(name: string): Promise<void>;
  /**
   * Runs `action` while HTTP `status` on a page navigation (and the console line Chromium logs
   * for it) is expected instead of being a failure; other problems still count.
   */
  expecting<T>(what: { status?: number; console?: RegExp }, action: () => Promise<T>): Promise<T>;
  /** Fails with every unexpected console error, page error or HTTP error on a navigation so far. */
  assertClean(): void;
}

/**
 * A page that records what a user would notice going wrong: any console error, uncaught
 * exception, or page navigation answered with an HTTP error status.
 */
export async function watchedPage(
  browser: Browser,
  dir: string,
  options: BrowserContextOptions = {},
): Promise<WatchedPage> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, ...options });
  context.setDefaultTimeout(60_000);
  context.setDefaultNavigationTimeout(60_000);
  const page = await context.newPage();
  const problems: string[] = [];
  let allowed: { status?: number; console?: RegExp } = {};
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = m.text();
    const expectedStatus =
      allowed.status !== undefined &&
      text.includes(`status of ${allowed.status} `) &&
      /^Failed to load/.test(text);
    if (expectedStatus || allowed.console?.test(text)) return;
    problems.push(`console error on ${page.url()}: ${text}`);
  });
  page.on('pageerror', (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
  page.on('response', (r) => {
    const request = r.request();
    if (!request.isNavigationRequest() || r.status() < 400 || r.status() === allowed.status) return;
    problems.push(`HTTP ${r.status()} on ${request.method()} ${r.url()}`);
  });
  return {
    page,
    context,
    async shot(name) {
      const n = (shots.get(dir) ?? 0) + 1;
      shots.set(dir, n);
      await page.screenshot({ path: join(dir, `${String(n).padStart(2, '0')}-${name}.png`), fullPage: true });
    },
    async expecting(what, action) {
      allowed = what;
      try {
        return await action();
      } finally {
        allowed = {};
      }
    },
    assertClean() {
      if (problems.length > 0) throw new Error(`the browser saw problems:\n${problems.join('\n')}`);
    },
  };
}

/** What a phone user and a screen reader depend on, read from the rendered page. */
export async function layoutFacts(page: Page) {
  // Chromium moves focus to an `autofocus` field at a rendering update after the load, not at the
  // load itself: wait (briefly) for that move, so the focus read below is the settled one.
  await page
    .waitForFunction(
      () => {
        const wanted = document.querySelector('[autofocus]');
        return !wanted || document.activeElement === wanted;
      },
      undefined,
      { timeout: 2000, polling: 50 },
    )
    .catch(() => undefined);
  return page.evaluate(() => ({
    viewport: document.querySelector('meta[name=viewport]')?.getAttribute('content') ?? null,
    lang: document.documentElement.lang,
    /** Wider than the screen means scrolling sideways on a phone. */
    overflowsX: document.documentElement.scrollWidth > window.innerWidth,
    h1: document.querySelector('h1')?.textContent ?? null,
    main: document.querySelectorAll('main').length,
    /** Inputs a user sees with no label pointing at them. */
    unlabelled: Array.from(document.querySelectorAll('input:not([type=hidden])'))
      .filter((i) => !(i as HTMLInputElement).labels?.length)
      .map((i) => i.id || i.getAttribute('name')),
    scripts: document.querySelectorAll('script').length,
    focused: document.activeElement?.id ?? null,
  }));
}

/** The text an input's aria-describedby points to, and whether it is marked invalid. */
export async function describedBy(page: Page, selector: string) {
  return page.evaluate((sel) => {
    const input = document.querySelector(sel)!;
    const ids = (input.getAttribute('aria-describedby') ?? '').split(/\s+/).filter(Boolean);
    return {
      invalid: input.getAttribute('aria-invalid'),
      description: ids.map((id) => document.getElementById(id)?.textContent ?? `(missing #${id})`).join(' '),
    };
  }, selector);
}

/** Runs `action` (a click or a key press) and waits until the page it leads to has loaded. */
export async function navigate(page: Page, action: () => Promise<void>): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), action()]);
}

/** The facts every controller page must show: phone-sized, labelled, no script, one main. */
export async function expectAccessiblePage(page: Page, h1: string) {
  const facts = await layoutFacts(page);
  expect(facts).toMatchObject({
    viewport: 'width=device-width, initial-scale=1',
    lang: 'en',
    overflowsX: false,
    h1,
    main: 1,
    unlabelled: [],
    scripts: 0,
  });
  return facts;
}
