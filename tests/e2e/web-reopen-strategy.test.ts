import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';
import { BROWSER_TEST_TIMEOUT_MS, screenshot, useBrowser, openOptions } from './browser.ts';

let browser: Browser;
let context: BrowserContext | undefined;
let page: Page;
let server: TestServer | undefined;
const clients: TestClient[] = [];

useBrowser(
  (launched) => (browser = launched),
  () => [...clients.splice(0), context, server],
);

/** A chat with one finished run of `strategy`, made over a socket; its id. */
async function chatWith(strategy: string, content: string, options: Record<string, unknown>): Promise<string> {
  const client = await TestClient.connect(server!.wsUrl);
  clients.push(client);
  client.chat(content, { agent_mode: true, strategy, strategy_options: options });
  await client.untilComplete({ timeoutMs: 30_000 });
  return client.session.session_id;
}

describe('a reopened chat remembers its strategy', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('opening a solver chat and a research chat puts their strategy and options in the picker', async () => {
    server = await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
    const solverChat = await chatWith('solver', 'Problem: what is (17+25)*3?', { approaches: false, max_loops: 2 });
    const researchChat = await chatWith('research', 'What is 12*7?', { mode: 'step' });
    context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
    page = await context.newPage();
    const picker = () => page.getByRole('combobox', { name: 'Strategy' });
    const selected = async () => picker().evaluate((select) => (select as HTMLSelectElement).selectedOptions[0]?.textContent ?? '');

    await page.goto(`${server.url}/?session=${solverChat}`);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.waitForFunction(
      () => (document.querySelector('select[aria-label="Strategy"], select') as HTMLSelectElement | null)?.selectedOptions[0]?.textContent === 'Staged solver',
    );
    // The replay follows "Live": the options fold behind their toggle once it is drawn.
    await page.getByTestId('user-turn').first().waitFor();
    await openOptions(page);
    expect(await selected()).toBe('Staged solver');
    expect(await page.getByRole('checkbox', { name: 'Approaches' }).isChecked()).toBe(false);
    await screenshot(page, 'reopened-solver-chat.png');

    await page.goto(`${server.url}/?session=${researchChat}`);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll('select')).some((select) => select.selectedOptions[0]?.textContent === 'Research (task graph)'),
    );
    // The replay follows "Live": the options fold behind their toggle once it is drawn.
    await page.getByTestId('user-turn').first().waitFor();
    await openOptions(page);
    expect(await selected()).toBe('Research (task graph)');
  });
});
