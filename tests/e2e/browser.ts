import AxeBuilder from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { adoptProcess, childProcesses, stopProcess } from '../helpers/process.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = join(import.meta.dirname, '..', 'artifacts');

/** A limit for the hook that launches the browser: more than the launch's own (which cleans up after itself). */
export const BROWSER_LAUNCH_HOOK_TIMEOUT_MS = 120_000;
/** A limit for a test that drives the browser against a server starting in the same test. */
export const BROWSER_TEST_TIMEOUT_MS = 60_000;

const browserPids = new WeakMap<Browser, number>();

/**
 * Debian's Chromium, headless, with nothing reaching out to the network. Playwright starts it in a
 * process group of its own; that group is registered (helpers/process.ts), so closeBrowser, the
 * worker's exit and the global teardown kill it when closing it does not work.
 */
export async function launchBrowser(): Promise<Browser> {
  const before = new Set(childProcesses().map((child) => child.pid));
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // Playwright kills the browser itself when the launch fails or takes longer than this.
    timeout: 90_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
  const launched = childProcesses().find((child) => !before.has(child.pid) && child.pgid === child.pid && child.command.includes('--remote-debugging-pipe'));
  if (launched) {
    adoptProcess(launched.pid, { group: true, description: `Chromium (${CHROMIUM_PATH})` });
    browserPids.set(browser, launched.pid);
  }
  return browser;
}

/** Closes the browser (for afterAll); when that fails or hangs, kills its process group. */
export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  if (!browser) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([browser.close().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, 15_000)))]);
  clearTimeout(timer);
  await stopProcess(browserPids.get(browser), { signal: 'SIGKILL' });
}

/** Types a message into the composer and sends it. */
export async function ask(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** Unfolds the composer's options (one line once a chat has started), so its controls can be used. */
export async function openOptions(page: Page): Promise<void> {
  const toggle = page.getByRole('button', { name: /^(Agent ·|Plain chat)/ });
  if ((await toggle.isVisible()) && (await toggle.getAttribute('aria-expanded')) === 'false') await toggle.click();
}

/** What axe-core finds serious or critical on the page as it is now, as `rule: selectors` lines. */
export async function seriousViolations(target: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page: target }).analyze();
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

/** Saves a screenshot under tests/artifacts. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, name);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/**
 * The hooks of a browser test file: one Chromium for the whole file (handed to `onLaunch`), and
 * after each test whatever it opened (its browser context, servers, model servers), closed in
 * the order given, failed or not.
 */
export function useBrowser(onLaunch: (browser: Browser) => void, opened: () => Array<{ close(): unknown } | undefined>): void {
  let launched: Browser | undefined;
  beforeAll(async () => {
    launched = await launchBrowser();
    onLaunch(launched);
  }, BROWSER_LAUNCH_HOOK_TIMEOUT_MS);
  afterAll(() => closeBrowser(launched), 30_000);
  afterEach(() => closeAll(...opened().map((item) => () => item?.close())), 30_000);
}

/** Waits until the web app's connection to the server is live. */
export function live(page: Page): Promise<void> {
  return page.getByRole('status', { name: 'Connection: Live' }).waitFor();
}

/** How a test opens the web app: the browser context's options, and whether to wait for a live connection. */
export interface PageOptions extends BrowserContextOptions {
  /** Wait for the live connection after loading (default true). */
  live?: boolean;
  /** Called with the new page before it loads anything (to listen to it). */
  prepare?: (page: Page) => void;
}

/**
 * The header of a browser test file: one Chromium for the file, and per test the servers, model
 * servers and browser contexts it opens, closed after it (newest first), failed or not.
 */
export function useWebApp() {
  let launched: Browser | undefined;
  beforeAll(async () => {
    launched = await launchBrowser();
  }, BROWSER_LAUNCH_HOOK_TIMEOUT_MS);
  afterAll(() => closeBrowser(launched), 30_000);
  const open = closeAfterEach();
  const web = {
    open,
    get browser(): Browser {
      if (!launched) throw new Error('the browser is not launched');
      return launched;
    },
    /** The server with the demo model (no delay unless `env` says), closed after the test. */
    async demo(env: Record<string, string> = {}): Promise<TestServer> {
      return open(await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0', ...env }));
    },
    /** A scripted model (a new one unless given) and the server against it, closed after the test. */
    async scripted(env: Record<string, string> = {}, model?: ScriptedLlmServer): Promise<{ llm: ScriptedLlmServer; server: TestServer }> {
      const llm = model ?? open(await ScriptedLlmServer.start());
      const server = open(await startStepwiseWithModel(llm.url, { LLM_MODEL: 'scripted-model', ...env }));
      return { llm, server };
    },
    /** The demo server and a live page on it with this strategy (by its label) chosen. */
    async demoWith(strategy: string): Promise<Page> {
      const page = await web.page((await web.demo()).url);
      await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label: strategy });
      return page;
    },
    /** A fresh browser context (closed after the test) with a page at `url`, its connection live. */
    async page(url: string, { live: waitLive = true, prepare, ...options }: PageOptions = {}): Promise<Page> {
      const context = open(await web.browser.newContext({ viewport: { width: 1000, height: 900 }, ...options }));
      const page = await context.newPage();
      prepare?.(page);
      await page.goto(url);
      if (waitLive) await live(page);
      return page;
    },
  };
  return web;
}
