import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

describe("a run's tokens and cost in the web app", { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it("shows each run's tokens and cost, the chat's total, and in Settings which model serves which purposes", async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'stepwise-usage-')), 'stepwise.config.json');
    writeFileSync(config, JSON.stringify({ models: { 'roa.reason': { model: 'gpt-4.1' } } }));
    const { llm, server } = await web.scripted({ LLM_MODEL: 'gpt-4o-mini', STEPWISE_CONFIG: config });
    page = await web.page(server.url, { viewport: { width: 1000, height: 800 } });
    await page.getByRole('switch', { name: 'Agent mode' }).check();

    // gpt-4.1 reasons (1,000,000 in at $2), gpt-4o-mini observes (1,000,000 out at $0.60).
    llm.enqueue(
      { text: reasonText('Plan.', { finish: true }), usage: { prompt_tokens: 1_000_000, completion_tokens: 0 } },
      { text: observeText('Done.', { final_answer: 'The answer.' }), usage: { prompt_tokens: 0, completion_tokens: 1_000_000 } },
    );
    await ask(page, 'First question');
    const spending = page.getByTestId('run-spending');
    await page.getByTestId('run-end').waitFor();
    expect(await spending.textContent()).toBe('2M tokens · $2.60');

    llm.enqueue(
      { text: reasonText('Plan.', { finish: true }), usage: { prompt_tokens: 500, completion_tokens: 0 } },
      { text: observeText('Done.', { final_answer: 'Another answer.' }), usage: { prompt_tokens: 0, completion_tokens: 500 } },
    );
    await ask(page, 'Second question');
    await page.getByTestId('run-end').nth(1).waitFor();
    expect(await spending.nth(1).textContent()).toBe('1k tokens · $0.0013');
    expect(await page.getByTestId('chat-spending').textContent()).toBe('This chat: 2M tokens · $2.60');
    await screenshot(page, 'run-usage-and-cost.png');

    await page.getByRole('button', { name: 'Settings' }).click();
    const routes = page.getByTestId('settings-model-routes');
    await routes.waitFor();
    expect(await routes.getByRole('listitem').allTextContents()).toEqual(['roa.reason → gpt-4.1', 'everything else → gpt-4o-mini']);
  });
});
