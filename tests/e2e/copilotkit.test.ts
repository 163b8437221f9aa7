// A third-party frontend: CopilotKit's runtime with Stepwise's AG-UI endpoint as its agent, and
// CopilotKit's stock React chat in Chromium. The chat shows prose only (no control block), a
// question reaches it as text and the next message answers it, and an approval is decided in words.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startCopilotKitApp } from '../fixtures/copilotkit/copilotkit-app.ts';
import { answerAfter, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { writesHello } from '../helpers/approvals.ts';
import { BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();

/** Sends a message from CopilotKit's chat input. */
async function send(page: Page, text: string): Promise<void> {
  const input = page.locator('textarea').first();
  await input.fill(text);
  await input.press('Enter');
}

async function open(): Promise<{ page: Page; llm: ScriptedLlmServer }> {
  const { llm, server } = await web.scripted();
  const app = web.open(await startCopilotKitApp(server.url));
  const page = await web.page(app.url, { viewport: { width: 1000, height: 800 }, live: false });
  await page.locator('textarea').first().waitFor({ timeout: 30_000 });
  return { page, llm };
}

/** No message on the page shows the loop's JSON. */
async function expectNoJson(page: Page): Promise<void> {
  const text = await page.locator('body').innerText();
  expect(text).not.toMatch(/```|[{}]|"(?:plan|should_continue|final_answer|tools_to_consider|finish)"\s*:|\bjson\b/);
}

describe('CopilotKit runtime + React chat against Stepwise', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('answers a question asked as text, with no JSON in any message', async () => {
    const { page, llm } = await open();
    llm.enqueue(
      ...answerAfter(
        'I need to know what to work out.',
        [{ name: 'request_input', arguments: { question: 'What shall I work out for you?' } }],
        'The answer is 1024.',
        '2 to the 10th is 1024.',
      ),
    );
    await send(page, 'help me');
    await page.getByText('What shall I work out for you?').first().waitFor({ timeout: 30_000 });
    await send(page, 'please work out 2^10');
    await page.getByText('2 to the 10th is 1024.').first().waitFor({ timeout: 30_000 });
    await screenshot(page, 'copilotkit-question.png');
    await expectNoJson(page);
    const toolMessages = llm.requests.flatMap((request) =>
      request.body.messages.filter((message) => message.role === 'tool').map((message) => message.content),
    );
    expect(toolMessages).toContain('please work out 2^10');
  });

  it('decides an approval in words', async () => {
    const { page, llm } = await open();
    llm.enqueue(...writesHello('Denied.', 'I did not write out.txt.'));
    await send(page, 'Write hello to out.txt');
    await page
      .getByText(/Reply "approve" to run it/)
      .first()
      .waitFor({ timeout: 30_000 });
    await send(page, 'deny: not now');
    await page.getByText('I did not write out.txt.').first().waitFor({ timeout: 30_000 });
    await screenshot(page, 'copilotkit-approval.png');
    await expectNoJson(page);
    const toolMessages = llm.requests.flatMap((request) =>
      request.body.messages.filter((message) => message.role === 'tool').map((message) => message.content),
    );
    expect(toolMessages.some((content) => content?.includes('denied this call: not now'))).toBe(true);
  });
});
