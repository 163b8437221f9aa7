import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_LAUNCH_HOOK_TIMEOUT_MS, BROWSER_TEST_TIMEOUT_MS, closeBrowser, launchBrowser } from './browser.ts';

// A new user's first minutes, on the offline demo model unless a test needs a scripted one.
let browser: Browser | undefined;
let demo: TestServer | undefined;
let context: BrowserContext | undefined;
let llm: ScriptedLlmServer | undefined;
let scripted: TestServer | undefined;
let page: Page;

beforeAll(async () => {
  browser = await launchBrowser();
  demo = await startStepwise({ LLM_PROVIDER: 'demo', FILE_MAX_BYTES: '2048' });
}, BROWSER_LAUNCH_HOOK_TIMEOUT_MS);

afterEach(
  () =>
    closeAll(
      () => context?.close(),
      () => scripted?.close(),
      () => llm?.close(),
      () => {
        context = scripted = llm = undefined;
      },
    ),
  30_000,
);

afterAll(
  () =>
    closeAll(
      () => demo?.close(),
      () => closeBrowser(browser),
    ),
  60_000,
);

/** A fresh browser context on the page of `url`, live; `prepare` runs before the page loads. */
async function open(url: string, viewport = { width: 1280, height: 800 }, prepare?: (page: Page) => void): Promise<Page> {
  context = await browser!.newContext({ viewport, colorScheme: 'light' });
  page = await context.newPage();
  prepare?.(page);
  await page.goto(url);
  await live();
  return page;
}

const live = () => page.getByRole('status', { name: 'Connection: Live' }).waitFor();

/** Every text the reason sections have shown, recorded in the page at each change. */
async function recordReasonTexts(): Promise<void> {
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { reasonTexts: string[] }).reasonTexts = seen;
    const record = () => {
      for (const section of document.querySelectorAll('.phase-reason')) seen.push(section.textContent ?? '');
    };
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

describe('a new user’s first minutes', { timeout: BROWSER_TEST_TIMEOUT_MS }, () => {
  it('never shows control-block JSON while reason streams or after stop', async () => {
    llm = await ScriptedLlmServer.start();
    scripted = await startStepwiseWithModel(llm.url, { LLM_MODEL: 'scripted-model' });
    const prose = 'Evaluate 6*7*2 with the calculator.';
    const text = reasonText(prose, { plan: 'Evaluate 6*7*2', tools_to_consider: ['calculator'] });
    // Streamed in small pieces, then silent inside the control block until the user stops.
    const stallAfter = Math.ceil((text.indexOf('"plan"') + '"plan": "Eval'.length) / 4);
    llm.enqueue({ text, chunkChars: 4, chunkDelayMs: 15, stallAfterChunks: stallAfter });
    // What the page received of the reason text: the server holds the block back, so the prose
    // arriving whole means the model's stream is inside the block.
    let streamed = '';
    let blockArrived!: () => void;
    const inBlock = new Promise<void>((resolve) => (blockArrived = resolve));
    await open(scripted.url, undefined, (newPage) =>
      newPage.on('websocket', (socket) =>
        socket.on('framereceived', ({ payload }) => {
          const event = JSON.parse(String(payload)) as { update_type?: string; delta?: string };
          if (event.update_type === 'agent_reason_delta') streamed += event.delta;
          if (streamed.includes(prose)) blockArrived();
        }),
      ),
    );
    await recordReasonTexts();
    await ask(page, 'What is 6*7*2?');
    await inBlock;
    await page.locator('.phase-reason .agent-text').getByText(prose, { exact: true }).waitFor();

    // Enter while the agent works steers it: the message waits for the run's next model call.
    await page.getByRole('textbox', { name: 'Message' }).fill('And then?');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    const waiting = page.getByTestId('steer-waiting').filter({ hasText: 'And then?' });
    await waiting.getByRole('button', { name: 'Cancel' }).waitFor();

    // Stopped, the run never reads it: it is withdrawn.
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByTestId('run-end').getByText('Stopped').waitFor();
    await waiting.waitFor({ state: 'detached' });
    expect(await page.locator('.phase-reason .agent-text').textContent()).toBe(prose);
    const shown = await page.evaluate(() => (window as unknown as { reasonTexts: string[] }).reasonTexts);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.filter((seen) => /[`{}]|"plan"|json/.test(seen))).toEqual([]);
    expect(await page.locator('main pre, main code').count()).toBe(0);
    // Nothing of the block reached the socket either.
    expect(streamed).not.toMatch(/[`{}]|"plan"/);
  });

  it('shows reason text with asterisks as written, and the answer as Markdown', async () => {
    await open(demo!.url);
    await ask(page, 'What is 6*7*2?');
    await page.getByText('Answered in 2 steps').or(page.getByText('Answered in 1 step')).waitFor();
    const reason = page.locator('.phase-reason').first();
    expect(await reason.textContent()).toContain('Evaluate 6*7*2 with the calculator.');
    expect(await page.locator('[data-testid="step-card"] em, [data-testid="step-card"] strong').count()).toBe(0);
    expect(await page.getByTestId('tool-card').first().textContent()).toContain('"expression": "6*7*2"');
    // The answer is Markdown: `6*7*2` = **84**.
    expect(await page.getByTestId('assistant-turn').locator('strong').textContent()).toBe('84');
  });

  it('reads a run: "Step 1" with the budget in the run header, finished steps folded live with a summary, human times, phase hints', async () => {
    await open(demo!.url);
    await ask(page, 'What is (17+25)*3, and what time is it?');
    await page
      .getByTestId('run-end')
      .getByText(/Answered in 2 steps/)
      .waitFor();
    const steps = page.getByTestId('step-card');
    expect(await steps.count()).toBe(2);
    expect(await steps.nth(0).locator('.step-badge').textContent()).toBe('Step 1');
    expect(await page.getByText(/Step \d of \d/).count()).toBe(0);
    expect(await page.getByTestId('run-budget').textContent()).toBe('budget: 10 steps');

    // The first step folded when the second began, without a reload, to one line: tool and result.
    expect(await steps.nth(0).getAttribute('open')).toBeNull();
    expect(await steps.nth(0).getByTestId('step-summary').textContent()).toBe('Calculator: (17+25)*3 → 126');
    expect(await steps.nth(1).getAttribute('open')).not.toBeNull();
    await steps.nth(0).locator('summary').first().click();
    expect(await steps.nth(0).getAttribute('open')).not.toBeNull();

    // Times as people read them.
    const started = await page.locator('.run-head time').textContent();
    expect(started).toMatch(/^\d{1,2}:\d{2}( [AP]M)?$/);
    expect(await page.getByTestId('run-end').textContent()).toMatch(/Answered in 2 steps · \d+(\.\d)? (ms|s)$/);
    const chat = page.getByRole('navigation', { name: 'Chats' }).getByRole('link', { name: /What is \(17\+25\)\*3/ });
    await chat.locator('.session-time').getByText('just now').waitFor();
    expect(await page.locator('.tool-local-time').textContent()).toMatch(/your time$/);

    // What each phase means, on hover.
    const titles = await steps
      .nth(1)
      .locator('h4')
      .evaluateAll((headings) => headings.map((heading) => heading.getAttribute('title')));
    expect(titles).toEqual([expect.stringMatching(/^Reason: /), expect.stringMatching(/^Act: /), expect.stringMatching(/^Observe: /)]);
  });

  it('answers a pending question with Enter in the message box', async () => {
    await open(demo!.url);
    await ask(page, 'Help me');
    await page
      .getByRole('alertdialog')
      .getByText(/Could you tell me a bit more/)
      .waitFor();
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Your answer');
    await page.keyboard.type('What is 2+3?');
    await page.keyboard.press('Enter');
    await page
      .getByTestId('run-end')
      .getByText(/Answered in/)
      .waitFor();
    expect(await page.getByRole('alertdialog').count()).toBe(0);
    expect(await page.locator('.question-record').first().textContent()).toContain('You answered: What is 2+3?');
    expect(await page.getByTestId('assistant-turn').textContent()).toContain('5');
  });

  it('undo brings a deleted chat back', async () => {
    await open(demo!.url);
    await ask(page, 'What is 1+1?');
    await page.getByTestId('run-end').waitFor();
    const keptId = new URL(page.url()).searchParams.get('session')!;
    await page.goto(demo!.url);
    await live();
    await ask(page, 'What is 2+2?');
    await page.getByTestId('run-end').waitFor();
    const chats = page.getByRole('navigation', { name: 'Chats' });
    const oldChat = chats.getByRole('link', { name: /What is 1\+1\?/ });
    await oldChat.waitFor();

    await chats.getByRole('button', { name: 'Delete “What is 1+1?”' }).click();
    const toast = page.getByTestId('undo-toast');
    await toast.getByText('Deleted “What is 1+1?” and its files').waitFor();
    expect(await oldChat.count()).toBe(0);
    await toast.getByRole('button', { name: 'Undo' }).click();
    await oldChat.waitFor();
    expect(await toast.count()).toBe(0);
    expect((await fetch(`${demo!.url}/api/sessions/${keptId}`)).status).toBe(200);
  });

  it('deletes a chat and its files once the undo time has run out', async () => {
    await open(demo!.url);
    await ask(page, 'What is 3+3?');
    await page.getByTestId('run-end').waitFor();
    const id = new URL(page.url()).searchParams.get('session')!;
    await page.goto(demo!.url);
    await live();
    const chats = page.getByRole('navigation', { name: 'Chats' });
    await chats.getByRole('button', { name: 'Delete “What is 3+3?”' }).click();
    expect((await fetch(`${demo!.url}/api/sessions/${id}`)).status).toBe(200);
    await page.getByTestId('undo-toast').waitFor({ state: 'detached', timeout: 15_000 });
    await expect.poll(async () => (await fetch(`${demo!.url}/api/sessions/${id}`)).status, { timeout: 10_000 }).toBe(404);
  });

  it('phone layout leaves most of the screen to the conversation', async () => {
    const height = 740;
    await open(demo!.url, { width: 375, height });
    const box = async (selector: string) => (await page.locator(selector).first().boundingBox())!;
    expect((await box('.app-header')).height).toBeLessThanOrEqual(48);
    // The agent options wait behind a toggle.
    expect(await page.getByRole('switch', { name: 'Agent mode' }).isVisible()).toBe(false);
    expect((await box('.conversation')).height).toBeGreaterThanOrEqual(height * 0.7);
    const toggle = page.getByRole('button', { name: /^Agent\b.* · up to 10 steps/ });
    await toggle.click();
    expect(await page.getByRole('switch', { name: 'Agent mode' }).isVisible()).toBe(true);
    await toggle.click();

    await ask(page, 'Help me');
    await page.getByRole('alertdialog').waitFor();
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Your answer');
    const conversation = (await box('.conversation')).height;
    expect(conversation).toBeGreaterThanOrEqual(height * 0.65);
    expect((await box('.app-header')).height + (await box('.dock')).height).toBeLessThanOrEqual(height * 0.4);
  });

  it('loads without a console error (the favicon included) and shows upload limits in human sizes', async () => {
    context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('response', (response) => response.status() >= 400 && problems.push(`${response.status()} ${response.url()}`));
    await page.goto(demo!.url);
    await live();
    // Whatever the page loads on its own (the favicon included) has loaded by the time it is idle.
    await page.waitForLoadState('networkidle');
    expect(problems).toEqual([]);
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    const favicon = await fetch(new URL(icon!, demo!.url));
    expect(favicon.status).toBe(200);
    expect(favicon.headers.get('content-type')).toContain('image/svg+xml');

    await page.getByLabel('Attach files').setInputFiles({ name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(5_000) });
    await page.getByRole('alert').getByText('Could not attach big.bin: Files are limited to 2 KB; this one has 4.9 KB').waitFor();
  });
});
