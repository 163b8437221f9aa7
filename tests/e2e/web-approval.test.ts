// Approving tool calls in the web app: two parallel writes ask; one is approved with its
// arguments edited, the other denied with a reason; the header counts what waits.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { answerAfter, observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, live, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

describe('tool approval in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('approves one call with edited arguments and denies another with a reason', async () => {
    const { llm, server } = await web.scripted();
    llm.enqueue(
      { text: reasonText('Two files.') },
      {
        toolCalls: [
          { id: 'a', name: 'write_file', arguments: { name: 'a.txt', content: 'A' } },
          { id: 'b', name: 'write_file', arguments: { name: 'b.txt', content: 'B' } },
        ],
      },
      { text: observeText('Done.', { final_answer: 'One written, one denied.' }) },
    );
    page = await web.page(server.url, { viewport: { width: 1280, height: 900 } });
    // The tool picker marks the tools that ask.
    expect(await page.locator('.approval-policy.approval-ask').count()).toBeGreaterThanOrEqual(1);

    await ask(page, 'Write two files');
    const forms = page.getByTestId('approval');
    await forms.nth(1).waitFor();
    expect(await page.getByTestId('approvals-waiting').textContent()).toBe('2 approvals waiting');
    await page.waitForFunction(() => document.title.startsWith('(2) Approval needed'));
    await screenshot(page, 'approval-pending.png');

    // The first: arguments edited (checked as JSON first), then approved.
    const first = forms.nth(0);
    const args = first.getByRole('textbox', { name: /Arguments/ });
    await args.fill('{ not json');
    await first.getByRole('button', { name: 'Approve' }).click();
    await first.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
    await args.fill(JSON.stringify({ name: 'edited.txt', content: 'edited in the browser' }));
    await first.getByRole('button', { name: 'Approve' }).click();

    // The second: denied, with a reason the model reads.
    const second = page.getByTestId('approval');
    await second.getByRole('textbox', { name: 'Reason for denying (optional)' }).fill('not this one');
    await second.getByRole('button', { name: 'Deny' }).click();

    await page
      .getByTestId('run-end')
      .getByText(/Answered/)
      .waitFor();
    expect(await page.getByTestId('approval').count()).toBe(0);
    expect(await page.getByTestId('approvals-waiting').count()).toBe(0);
    const cards = page.getByTestId('tool-card');
    await expect(cards.nth(0).innerText()).resolves.toMatch(/approved with your edited arguments[\s\S]*name: edited\.txt[\s\S]*Wrote edited\.txt/);
    await expect(cards.nth(1).innerText()).resolves.toMatch(/The person denied this call: not this one/);
    const written = await fetch(`${server.url}/api/sessions/${await page.evaluate(() => new URL(location.href).searchParams.get('session'))}/files/edited.txt`);
    expect(await written.text()).toBe('edited in the browser');
    const observe = llm.requests.find((request) => request.phase === 'observe')!;
    expect(observe.body.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual([
      expect.stringMatching(/edited\.txt/),
      'The person denied this call: not this one',
    ]);
    await screenshot(page, 'approval-done.png');

    // Settings lists every tool's policy.
    await page.getByRole('button', { name: 'Settings' }).click();
    const policies = page.getByTestId('approval-policies');
    await expect(policies.innerText()).resolves.toMatch(
      /write_file: Asks you to approve each call[\s\S]*calculator: Runs without asking|calculator: Runs without asking[\s\S]*write_file: Asks you to approve each call/,
    );
  });

  it('an approval nobody answered in time shows the run waiting for you; approving it later goes on where it stood', async () => {
    const { llm, server } = await web.scripted({ AGENT_INPUT_TIMEOUT_MS: '400' });
    llm.enqueue({ text: reasonText('A file.') }, { toolCalls: [{ id: 'w', name: 'write_file', arguments: { name: 'later.txt', content: 'approved later' } }] });
    page = await web.page(server.url, { viewport: { width: 1280, height: 900 } });
    await ask(page, 'Write a file');
    await page.getByTestId('run-parked').waitFor();
    await expect(page.getByTestId('run-parked').textContent()).resolves.toMatch(/^Waiting for you: nobody answered in time, so this run is parked/);
    await expect(page.getByTestId('approval').textContent()).resolves.toMatch(/waiting for you/);
    await screenshot(page, 'run-parked.png');
    // A link to a question that is not open answers 404, and the page says there is nothing to answer.
    const sessionId = await page.evaluate(() => new URL(location.href).searchParams.get('session'));
    const other = await page.context().newPage();
    const response = await other.goto(`${server.url}/answer/q_nothing?session=${sessionId}`);
    expect(response?.status()).toBe(404);
    await other.getByRole('heading', { name: 'Nothing to answer here' }).waitFor();
    await other.close();

    llm.enqueue({ text: observeText('Done.', { final_answer: 'Written, once you approved.' }) });
    await page.getByTestId('approval').getByRole('button', { name: 'Approve' }).click();
    await page
      .getByTestId('run-end')
      .getByText(/Answered/)
      .waitFor();
    expect(await page.getByTestId('run-parked').count()).toBe(0);
    expect(llm.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'observe']);
  });

  it('a stop during a step says what became of each of its calls', async () => {
    const { llm, server } = await web.scripted();
    llm.enqueue(
      { text: reasonText('Two calls.') },
      {
        toolCalls: [
          { id: 'calc', name: 'calculator', arguments: { expression: '2+2' } },
          { id: 'w', name: 'write_file', arguments: { name: 'never.txt', content: 'x' } },
        ],
      },
    );
    page = await web.page(server.url, { viewport: { width: 1280, height: 900 } });
    await ask(page, 'Calculate and write');
    await page.getByTestId('approval').waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByTestId('run-end').getByText('Stopped').waitFor();
    await expect(page.getByTestId('stop-receipt').textContent()).resolves.toBe('Calculator: completed · Write a file never.txt: not started');
    // The approval went with the run: nothing is left to approve.
    expect(await page.getByTestId('approval').count()).toBe(0);
    await screenshot(page, 'stop-receipt.png');
  });

  it('tells a hidden tab by a system notification whose click brings the approval forward; the offer to notify is made once', async () => {
    const { llm, server } = await web.scripted();
    // The first run is left waiting for its approval: it takes no observe reply.
    const script = (ends = true) =>
      llm.enqueue(
        { text: reasonText('A file.') },
        { toolCalls: [{ id: 'w', name: 'write_file', arguments: { name: 'a.txt', content: 'A' } }] },
        ...(ends ? [{ text: observeText('Done.', { final_answer: 'Written.' }) }] : []),
      );
    // Not decided yet: the offer says why, and "Not now" puts it away for good.
    page = await web.page(server.url, { viewport: { width: 390, height: 760 } });
    script(false);
    await ask(page, 'Write a file');
    const offer = page.getByRole('region', { name: 'Notifications' });
    await offer.getByText('Get a notification when the agent needs you').waitFor();
    await screenshot(page, 'notification-offer-phone.png');
    await offer.getByRole('button', { name: 'Not now' }).click();
    await offer.waitFor({ state: 'detached' });
    await page.reload();
    await page.getByTestId('approval').waitFor();
    expect(await offer.count()).toBe(0);
    await page.context().close();

    // Allowed, and the tab in the background: the approval and the run's end are notified.
    const context = web.open(await web.browser.newContext({ viewport: { width: 1280, height: 900 } }));
    await context.grantPermissions(['notifications'], { origin: server.url });
    await context.addInitScript(() => {
      const Real = window.Notification;
      const shown: Notification[] = [];
      Object.assign(window, { shownNotifications: shown });
      window.Notification = class extends Real {
        constructor(title: string, options?: NotificationOptions) {
          super(title, options);
          shown.push(this);
        }
      } as typeof Notification;
    });
    page = await context.newPage();
    await page.goto(server.url);
    await live(page);
    await page.evaluate(() => {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    script();
    await ask(page, 'Write a file');
    const titles = () =>
      page.evaluate(() => (window as unknown as { shownNotifications: Notification[] }).shownNotifications.map((note) => `${note.title}: ${note.body}`));
    await page.waitForFunction(() => (window as unknown as { shownNotifications: Notification[] }).shownNotifications.length > 0);
    expect(await titles()).toEqual(['Approval needed: The agent wants to run write_file; it waits for your answer.']);
    expect(await page.getByRole('region', { name: 'Notifications' }).count()).toBe(0);
    await page.evaluate(() => (window as unknown as { shownNotifications: Notification[] }).shownNotifications[0]!.onclick?.(new Event('click')));
    expect(await page.evaluate(() => document.activeElement?.closest('[data-testid="approval"]') !== null)).toBe(true);
    await page.getByTestId('approval').getByRole('button', { name: 'Approve' }).click();
    await page.waitForFunction(() => (window as unknown as { shownNotifications: Notification[] }).shownNotifications.length > 1);
    expect((await titles())[1]).toBe('The run finished: Open the chat to read how it ended.');
  });

  it('the answer page a notification links to approves a call from a phone; once answered it has nothing to answer', async () => {
    const { llm, server } = await web.scripted();
    llm.enqueue(
      ...answerAfter('A file.', [{ id: 'w', name: 'write_file', arguments: { name: 'from-phone.txt', content: 'approved on a phone' } }], 'Done.', 'Written.'),
    );
    page = await web.page(server.url, { viewport: { width: 1280, height: 900 } });
    await ask(page, 'Write a file');
    const questionId = await page.getByTestId('approval').getAttribute('data-question-id');
    const sessionId = await page.evaluate(() => new URL(location.href).searchParams.get('session'));

    const phone = await page.context().newPage();
    await phone.setViewportSize({ width: 375, height: 740 });
    const answerUrl = `${server.url}/answer/${questionId}?session=${sessionId}`;
    await phone.goto(answerUrl);
    await phone.getByRole('heading', { name: 'Approve this call?' }).waitFor();
    await expect(phone.getByLabel('Arguments').textContent()).resolves.toContain('"name": "from-phone.txt"');
    await screenshot(phone, 'answer-page-phone.png');
    await phone.getByRole('button', { name: 'Approve' }).click();
    await phone.getByRole('heading', { name: 'Approved' }).waitFor();
    await page
      .getByTestId('run-end')
      .getByText(/Answered/)
      .waitFor();
    const written = await fetch(`${server.url}/api/sessions/${sessionId}/files/from-phone.txt`);
    expect(await written.text()).toBe('approved on a phone');

    await phone.goto(answerUrl);
    await phone.getByRole('heading', { name: 'Nothing to answer here' }).waitFor();
    await screenshot(phone, 'answer-page-closed-phone.png');
  });
});
