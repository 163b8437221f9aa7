import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { taskToStop } from '../helpers/research-script.ts';
import { gate } from '../helpers/steer.ts';
import type { TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, seriousViolations, useWebApp } from './browser.ts';

// Talking to a run while it works, in Chromium against the real server and a scripted model.
const web = useWebApp();

/** How long to wait for the model server to see a request (or its close): the page, the server and the run start first, on a busy machine. */
const MODEL_WAIT_MS = 30_000;

/** A page on the app, its connection live. */
function openApp(server: TestServer, width = 1000, height = 900): Promise<Page> {
  return web.page(server.url, { viewport: { width, height }, colorScheme: 'light' });
}

/** Types into the message box and presses Enter. */
async function type(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('textbox', { name: 'Message' }).press('Enter');
}

/** Every message the model was sent, as one text. */
const sentToModel = (llm: ScriptedLlmServer) => llm.requests.flatMap((request) => request.body.messages.map((message) => message.content ?? '')).join('\n');

describe('talking to a running run', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('steers it (queued, then applied at its step), withdraws a waiting message, and queues one that starts the next run', async () => {
    const { llm, server } = await web.scripted();
    const firstReason = gate();
    llm.enqueue(
      { text: reasonText('Count the primes below 20 one by one.'), after: firstReason.promise },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2+3' } }] },
      { text: observeText('Counted some.', { should_continue: true }) },
      { text: reasonText('Only the odd ones now, as asked.', { finish: true }) },
      { text: observeText('Done.', { final_answer: 'There are 8 primes below 20.' }) },
      // The queued message's run.
      { text: reasonText('Explain the sieve.', { finish: true }) },
      { text: observeText('Explained.', { final_answer: 'The sieve crosses out multiples.' }) },
    );
    const page = await openApp(server);
    await ask(page, 'How many primes are below 20?');
    const composer = page.locator('form.composer');
    await composer.getByRole('button', { name: 'Steer' }).waitFor();

    // Enter steers: the message waits in the run, with Cancel.
    await type(page, 'Only odd numbers, please');
    const run = page.getByTestId('run').first();
    const steer = run.getByTestId('steer-waiting').filter({ hasText: 'Only odd numbers, please' });
    await steer.getByRole('button', { name: 'Cancel' }).waitFor();
    await expect(steer.textContent()).resolves.toContain('queued');

    // A second one is withdrawn before the run takes it.
    await type(page, 'Never mind this one');
    const withdrawn = run.getByTestId('steer-waiting').filter({ hasText: 'Never mind this one' });
    await withdrawn.getByRole('button', { name: 'Cancel' }).click();
    await withdrawn.waitFor({ state: 'detached' });

    // The menu queues one after this run.
    await page.getByRole('textbox', { name: 'Message' }).fill('Then explain the sieve');
    await composer.getByRole('button', { name: 'More ways to send' }).click();
    await screenshot(page, 'steer-menu.png');
    await page.getByRole('menuitem', { name: /Queue after this run/ }).click();
    const queued = page.locator('[data-testid="steer-waiting"][data-delivery="queue"]');
    await queued.getByRole('button', { name: 'Cancel' }).waitFor();
    await screenshot(page, 'steer-waiting.png');
    expect(await seriousViolations(page)).toEqual([]);

    // Another tab (a phone) that joins now shows what waits, from the session.
    const phone = web.open(await web.browser.newContext({ viewport: { width: 390, height: 800 }, colorScheme: 'light' }));
    const phonePage = await phone.newPage();
    await phonePage.goto(page.url());
    await phonePage.getByTestId('steer-waiting').nth(1).waitFor();
    expect(await phonePage.getByTestId('steer-waiting').allTextContents()).toEqual([
      expect.stringContaining('Only odd numbers, please'),
      expect.stringContaining('Then explain the sieve'),
    ]);
    await phonePage.getByRole('textbox', { name: 'Message' }).fill('Something more');
    await screenshot(phonePage, 'steer-waiting-phone.png');

    // The run goes on and takes the steer at its next step; the cancelled one never reaches the model.
    firstReason.open();
    const applied = run.getByTestId('steer-applied').filter({ hasText: 'Only odd numbers, please' });
    await applied.waitFor();
    await expect(applied.textContent()).resolves.toMatch(/applied at step \d/);
    await run.getByTestId('run-end').waitFor();
    await applied.scrollIntoViewIfNeeded();
    await screenshot(page, 'steer-applied.png');

    // The queued message starts the next run as its question.
    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').waitFor();
    await page.locator('[data-testid="user-turn"][data-queued]').getByText('Then explain the sieve').waitFor();
    expect(await page.getByTestId('steer-waiting').count()).toBe(0);
    expect(sentToModel(llm)).toContain('Only odd numbers, please');
    expect(sentToModel(llm)).toContain('Then explain the sieve');
    expect(sentToModel(llm)).not.toContain('Never mind this one');

    // A reload shows where the steer landed, from the log.
    await page.reload();
    await page.getByTestId('steer-applied').filter({ hasText: 'Only odd numbers, please' }).waitFor();
    expect(await page.getByText('Only odd numbers, please').count()).toBe(1);
    await screenshot(page, 'steer-reloaded.png');
  });
  it('interrupts the model call in flight with Interrupt now, and says the run went on with the message at once', async () => {
    const { llm, server } = await web.scripted();
    llm.respond((request) => {
      const steered = request.body.messages.some((message) => message.content?.includes('Use a sieve'));
      if (request.phase === 'reason')
        return steered ? { text: reasonText('A sieve, then.', { finish: true }) } : { text: 'I will check 2, 3, 5, 7', chunkChars: 4, stallAfterChunks: 3 };
      return { text: observeText('Sieved.', { final_answer: 'There are 8 primes below 20.' }) };
    });
    const page = await openApp(server);
    await ask(page, 'How many primes are below 20?');
    const cutCall = await llm.waitFor((request) => request.phase === 'reason', MODEL_WAIT_MS);
    await page.getByRole('textbox', { name: 'Message' }).fill('Use a sieve');
    await page.locator('form.composer').getByRole('button', { name: 'More ways to send' }).click();
    await page.getByRole('menuitem', { name: /Interrupt now/ }).click();
    await llm.waitForAbort(cutCall, MODEL_WAIT_MS);
    const applied = page.getByTestId('steer-applied').filter({ hasText: 'Use a sieve' });
    await expect(applied.getByText(/Your message: interrupted step 1/).textContent()).resolves.toBeTruthy();
    await page.getByTestId('run-end').getByText('Answered in 1 step').waitFor();
    await screenshot(page, 'steer-interrupted.png');
  });
  it('stops one research task while the others go on, shows its receipt, runs it again, and takes a message for one task', async () => {
    const { llm, server } = await web.scripted();
    // Task 1.2's second round works until it is stopped; run again, it answers.
    const { model, siblings, runAgain } = taskToStop();
    llm.respond(model);
    const page = await openApp(server, 1000, 1100);
    await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label: 'Research (task graph)' });
    await ask(page, 'Gather three sources');
    const hanging = await llm.waitFor((request) => request.node === '1.2' && request.body.messages.some((message) => message.role === 'tool'), MODEL_WAIT_MS);

    // A message for task 1.1 alone waits for that task's next model call.
    const first = page.getByRole('group', { name: 'Task 1.1' });
    await first.getByRole('button', { name: 'Message this task' }).click();
    await first.getByRole('textbox', { name: 'Message to task 1.1' }).fill('Look at the 2019 survey first');
    await first.getByRole('button', { name: 'Send to task' }).click();
    await first
      .getByTestId('task-message')
      .getByText(/waiting for its next model call/)
      .waitFor();

    // Task 1.2 stops alone: only its request is closed, and it says so with its receipt.
    const second = page.getByRole('group', { name: 'Task 1.2' });
    await second.getByRole('button', { name: 'Stop this task' }).click();
    await llm.waitForAbort(hanging, MODEL_WAIT_MS);
    runAgain();
    await expect(second.getByTestId('task-receipt').textContent()).resolves.toBe('Stopped: no tool call was running');
    await page.locator('[data-testid="graph-task"][data-status="stopped"]').getByText('Source 1.2').waitFor();
    await page.getByRole('button', { name: 'List only' }).click();
    await screenshot(page, 'task-stopped.png');
    expect(await seriousViolations(page)).toEqual([]);
    expect(llm.requests.filter((request) => request.aborted)).toEqual([hanging]);

    // Run again waits for the tasks running now, then the run finishes with all three done.
    await second.getByRole('button', { name: 'Run again' }).click();
    await second.getByText(/runs again when the tasks running now finish/).waitFor();
    siblings.open();
    await page.getByTestId('run-end').waitFor();
    await expect(page.locator('[data-testid="graph-task"][data-status="done"]').count()).resolves.toBe(3);
    await first
      .getByTestId('task-message')
      .getByText(/reached task 1\.1/)
      .waitFor();
    const toFirst = llm.requests.filter(
      (request) => request.node === '1.1' && request.body.messages.some((message) => message.content?.includes('2019 survey')),
    );
    expect(toFirst.length).toBeGreaterThan(0);
    expect(
      llm.requests
        .filter((request) => request.node !== '1.1')
        .some((request) => request.body.messages.some((message) => message.content?.includes('2019 survey'))),
    ).toBe(false);
    await screenshot(page, 'task-run-again.png');
  });
  it('queues a message sent while a plain answer streams, and shows it as the next answer’s question', async () => {
    const { llm, server } = await web.scripted();
    const firstAnswer = gate();
    llm.enqueue({ text: 'Hello there.', after: firstAnswer.promise }, { text: 'Bonjour.' });
    const page = await openApp(server);
    await page.getByRole('switch', { name: 'Agent mode' }).uncheck();
    await ask(page, 'Hi');
    await llm.waitFor((request) => request.phase === 'chat', MODEL_WAIT_MS);
    await page.getByRole('textbox', { name: 'Message' }).fill('And in French?');
    await page.locator('form.composer').getByRole('button', { name: 'Queue' }).click();
    await page.locator('[data-testid="steer-waiting"][data-delivery="queue"]').getByText('And in French?').waitFor();
    firstAnswer.open();
    await page.getByTestId('assistant-turn').getByText('Bonjour.').waitFor();
    expect(await page.getByTestId('user-turn').allTextContents()).toEqual(['Hi', expect.stringContaining('And in French?')]);
    expect(await page.getByTestId('steer-waiting').count()).toBe(0);
  });
});
