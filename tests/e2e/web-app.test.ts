import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { answerAfter, observeText, reasonText, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import type { TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;
let llm: ScriptedLlmServer;
let server: TestServer;
let dialogs: string[];

// The first server of the file opens the shared embedded database: seconds on a busy machine.
beforeEach(async () => {
  ({ llm, server } = await web.scripted({ AGENT_MAX_STEPS: '3', AGENT_MAX_STEPS_LIMIT: '6' }));
  dialogs = [];
  page = await web.page(server.url, {
    prepare: (opened) =>
      opened.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      }),
  });
}, 120_000);

describe('the web app', { timeout: BROWSER_TEST_TIMEOUT_MS }, () => {
  it('shows the model in use and the agent controls with the server’s limits', async () => {
    await expect(page.getByTestId('model').textContent()).resolves.toContain('scripted-model');
    expect(await page.getByRole('switch', { name: 'Agent mode' }).isChecked()).toBe(true);
    const maxIterations = page.getByRole('spinbutton', { name: 'Max iterations' });
    expect(await maxIterations.inputValue()).toBe('3');
    await maxIterations.fill('999');
    await maxIterations.blur();
    expect(await maxIterations.inputValue()).toBe('6');
    await maxIterations.fill('0');
    await maxIterations.blur();
    expect(await maxIterations.inputValue()).toBe('1');
  });

  it('renders a full agent run step by step, with the answer as the assistant’s turn', async () => {
    llm.enqueue(
      { text: reasonText('First, multiply 17 by 3.'), delayMs: 100 },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '17*3' } }] },
      { text: observeText('17*3 is 51; now add 75.', { should_continue: true }) },
      { text: reasonText('Add 75 to 51.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '51+75' } }] },
      { text: observeText('That makes 126.', { should_continue: false, final_answer: 'The result is **126**.' }) },
    );
    await ask(page, 'What is 17*3 + 75?');
    await page.getByTestId('run-budget').filter({ hasText: 'budget: 3 steps' }).waitFor();
    await page.getByText('Answered in 2 steps').waitFor();

    const steps = page.getByTestId('step-card');
    expect(await steps.count()).toBe(2);
    await expect(steps.nth(0).textContent()).resolves.toMatch(/Step 1.*Reason.*First, multiply 17 by 3\..*Act.*[Cc]alculator.*51.*Observe.*17\*3 is 51/s);
    await expect(steps.nth(1).textContent()).resolves.toMatch(/Step 2.*Add 75 to 51\..*[Cc]alculator.*126.*That makes 126\./s);
    const tools = page.getByTestId('tool-card');
    await expect(tools.nth(1).textContent()).resolves.toMatch(/[Cc]alculator.*done.*ms.*"expression": "51\+75".*126/s);
    const answer = page.getByTestId('assistant-turn');
    expect(await answer.locator('strong').textContent()).toBe('126');
    // Send comes back once the response is complete, a commit after the run's end.
    await page.getByRole('button', { name: 'Send' }).waitFor();

    // Finished steps fold as the run goes on (the last one stays open); a click opens one again.
    expect(await steps.nth(0).getAttribute('open')).toBeNull();
    expect(await steps.nth(1).getAttribute('open')).not.toBeNull();
    await steps.nth(0).locator('summary').first().click();
    expect(await steps.nth(0).getAttribute('open')).not.toBeNull();
    await screenshot(page, 'finished-run.png');
  });

  it('stops a run at once with the Stop button, cancelling the model request', async () => {
    llm.enqueue({ text: reasonText('Use a tool.') }, { hang: true });
    await ask(page, 'Do something slow');
    const act = await llm.waitFor((request) => request.phase === 'act');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByTestId('run-end').getByText('Stopped').waitFor();
    await llm.waitForAbort(act);
    await page.getByRole('button', { name: 'Send' }).waitFor();
  });

  it('shows the agent’s question, takes the answer, and finishes the run', async () => {
    llm.enqueue(
      ...answerAfter(
        'The city is missing.',
        [{ id: 'ask', name: 'request_input', arguments: { question: 'Which city do you mean?' } }],
        'The user means Oslo.',
        'Oslo it is.',
      ),
    );
    await ask(page, 'What is the weather like?');
    const banner = page.getByRole('alertdialog');
    await banner.getByText('Which city do you mean?').waitFor();
    const answerBox = page.getByRole('textbox', { name: 'Your answer' });
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Your answer');
    await screenshot(page, 'pending-question.png');
    await answerBox.fill('Oslo');
    await page.getByRole('button', { name: 'Answer' }).click();
    await page.getByText('Answered in 1 step').waitFor();
    expect(await banner.count()).toBe(0);
    expect(await page.getByTestId('assistant-turn').textContent()).toContain('Oslo it is.');
    const toolMessage = llm.requests[2]!.body.messages.find((message) => message.role === 'tool');
    expect(toolMessage?.content).toBe('Oslo');
  });

  it('respects the max iterations set for the run', async () => {
    llm.respond((request) => ({
      text: request.phase === 'observe' ? observeText(`Still going (${request.index}).`) : reasonText('Keep going.'),
    }));
    await page.getByRole('spinbutton', { name: 'Max iterations' }).fill('2');
    await ask(page, 'Never finish');
    await page.getByText(/Max steps reached \(2\)/).waitFor();
    expect(await page.getByTestId('step-card').count()).toBe(2);
    await page.getByTestId('run-budget').filter({ hasText: 'budget: 2 steps' }).waitFor();
    expect(llm.requests.filter((request) => request.phase === 'reason')).toHaveLength(2);
  });

  it('renders HTML in a model answer as text, never as markup', async () => {
    const payload = '<img src=x onerror=alert(1)>';
    llm.enqueue({ text: reasonText('Answer directly.', { finish: true }) }, { text: observeText('Done.', { final_answer: `Here: ${payload}` }) });
    await ask(page, 'Say something dangerous');
    const answer = page.getByTestId('assistant-turn');
    await answer.waitFor();
    expect(await answer.textContent()).toContain(payload);
    expect(await page.locator('main img').count()).toBe(0);
    // Had the markup been rendered, its image would have failed to load (and alerted) by the time a
    // probe with the same source has: an alert blocks the page until the dialog handler dismisses it.
    await page.evaluate(
      () =>
        new Promise((resolve) => {
          const probe = new Image();
          probe.onerror = probe.onload = resolve;
          probe.src = 'x';
        }),
    );
    expect(dialogs).toEqual([]);
  });

  it('answers in plain chat when agent mode is off', async () => {
    llm.enqueue({ text: 'Hello from the model.' });
    await page.getByRole('switch', { name: 'Agent mode' }).uncheck();
    await ask(page, 'Hi');
    await page.getByTestId('assistant-turn').getByText('Hello from the model.').waitFor();
    expect(await page.getByTestId('step-card').count()).toBe(0);
  });
});
