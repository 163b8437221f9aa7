import { exampleStrategy, STRATEGIES, TOKENS } from '@stepwise/backend';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwise } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, live, useWebApp, openOptions } from './browser.ts';

const web = useWebApp();
let page: Page;

/** The real server on the scripted model, offering roa and the example strategy (one branch per point). */
async function startWithExample() {
  const llm = web.open(await ScriptedLlmServer.start());
  const server = web.open(
    await startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', LLM_MODEL: 'scripted-model' }, (container) =>
      container.register(TOKENS.Strategies, { useValue: [...STRATEGIES, exampleStrategy] }),
    ),
  );
  llm.respond((request) =>
    request.purpose === 'example.points' ? { text: JSON.stringify({ points: ['cost', 'speed', 'risk'] }) } : { text: `On point ${request.node}.` },
  );
  page = await web.page(server.url);
  return llm;
}

describe('strategies in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('offers the server’s strategies, sends the chosen one with the options changed, shows its branches, and remembers the choice', async () => {
    const llm = await startWithExample();
    const picker = page.getByRole('combobox', { name: 'Strategy' });
    expect(await picker.inputValue()).toBe('roa');
    // roa has no options.
    expect(await page.getByRole('spinbutton', { name: 'Max points' }).count()).toBe(0);

    await picker.selectOption({ label: 'Example: one branch per point' });
    await page.getByText('Lists the points of a question as data').waitFor();
    const maxPoints = page.getByRole('spinbutton', { name: 'Max points' });
    expect(await maxPoints.inputValue()).toBe('3');
    expect(await maxPoints.getAttribute('min')).toBe('1');
    expect(await maxPoints.getAttribute('max')).toBe('5');
    await maxPoints.fill('2');

    await ask(page, 'Should we move?');
    await page.getByText('Answered in 2 steps').waitFor();
    // The server ran the chosen strategy with the changed option: two of the three points.
    expect(llm.requests.map((request) => [request.purpose, request.node ?? null])).toEqual([
      ['example.points', null],
      ['example.point', '1'],
      ['example.point', '2'],
    ]);
    const run = page.getByTestId('run');
    await expect(run.getByTestId('run-strategy').textContent()).resolves.toBe('Example: one branch per point');
    const branches = run.getByTestId('branch');
    expect(await branches.count()).toBe(2);
    await expect(branches.nth(0).textContent()).resolves.toMatch(/Step 1.*Iteration 1.*Reason.*On point 1\./s);
    await expect(branches.nth(1).textContent()).resolves.toMatch(/Step 2.*Iteration 2.*On point 2\./s);
    await screenshot(page, 'strategy-branches.png');

    // After a reload the choice is still there, and the run is rebuilt with its branches.
    await page.reload();
    await live(page);
    // The replay follows "Live": the options fold behind their toggle once it is drawn.
    await page.getByTestId('user-turn').first().waitFor();
    await openOptions(page);
    expect(await picker.inputValue()).toBe('example');
    expect(await maxPoints.inputValue()).toBe('2');
    await page.getByTestId('branch').nth(1).waitFor();
    expect(await page.getByTestId('branch').count()).toBe(2);

    // Back to roa: the example's options go with it.
    await picker.selectOption('roa');
    expect(await page.getByRole('spinbutton', { name: 'Max points' }).count()).toBe(0);
  });
});
