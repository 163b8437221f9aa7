// A run ends as a success only when its answer rests on what its tools returned: over the wire,
// every strategy of the demo model either answers a newcomer's wording right or ends
// `unresolved` with a sentence saying why, and never ends green with a wrong answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAfterEach } from '../helpers/per-test.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let server: TestServer;
const open = closeAfterEach();

beforeAll(async () => {
  server = await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
});
afterAll(async () => {
  await server?.close();
});

/** A client of the file's server, closed after the test. */
const connect = async () => open(await TestClient.connect(server.wsUrl));

type Event = Record<string, unknown>;
const ALL = ['roa', 'plan_execute', 'autonomous', 'solver', 'research'] as const;
const SUCCESS = ['answered', 'workflow_complete', 'natural_stop'];

/** What a wording should come to: an answer holding `answer`, or `unresolved` with a summary matching `why`. */
type Expected = { answer: RegExp } | { why: RegExp };

const README: Record<(typeof ALL)[number], [string, RegExp]> = {
  roa: ['First compute 12*7, then add 15, divide by 3, subtract 4', /\*\*29\*\*/],
  plan_execute: ['What time is it, and what is 2^10?', /\*\*1024\*\*/],
  autonomous: ['Tell three short facts about octopus and keep a list', /octopus/],
  solver: ['What is (17+25)*3, then subtract 6?', /\*\*120\*\*/],
  research: ['What time is it, and what is 12*7?', /\*\*84\*\*/],
};

const NOTES = '# Notes\nThe launch is on Friday.\nBring the slides.\n';

/** Twenty wordings beside the README's: arithmetic, percentages, files named, attached or missing, vague. */
const WORDINGS: Array<{ content: string; files?: Record<string, string>; expected: Expected }> = [
  { content: 'What is 15% of 240, then add 7?', expected: { answer: /\b43\b/ } },
  { content: 'What is 20 percent of 50?', expected: { answer: /\b10\b/ } },
  { content: 'Calculate 12 times 7', expected: { answer: /\b84\b/ } },
  { content: 'what is 100 divided by 8', expected: { answer: /\b12\.5\b/ } },
  { content: 'Multiply 6 by 9', expected: { answer: /\b54\b/ } },
  { content: 'What is the sum of 125 and 375?', expected: { answer: /\b500\b/ } },
  { content: 'What is seven plus eight?', expected: { answer: /\b15\b/ } },
  { content: 'Subtract 19 from 100', expected: { answer: /\b81\b/ } },
  { content: 'What is the square root of 144?', expected: { answer: /\b12\b/ } },
  { content: 'What is 2 to the power of 8?', expected: { answer: /\b256\b/ } },
  { content: 'Compute 10/0 please', expected: { why: /calculator could not evaluate/i } },
  { content: 'Summarize this file and tell me how many lines it has', files: { 'notes.md': NOTES }, expected: { answer: /notes\.md\*\*: 3 lines/ } },
  {
    content: 'What does the attached file say?',
    files: { 'old.txt': 'Old words.\n', 'fresh.md': NOTES },
    expected: { answer: /fresh\.md\*\*: 3 lines/ },
  },
  { content: 'Summarize notes.md', files: { 'notes.md': NOTES }, expected: { answer: /notes\.md\*\*: 3 lines/ } },
  { content: 'Summarize report.pdf for me', expected: { why: /no file report\.pdf/i } },
  { content: 'Summarize this file and tell me how many lines it has', expected: { why: /no file is attached/i } },
  { content: 'What is the capital of France?', expected: { why: /found nothing it can do/i } },
  { content: 'Write me a poem about autumn leaves falling slowly', expected: { why: /found nothing it can do/i } },
  { content: 'Explain quantum computing to a ten year old child', expected: { why: /found nothing it can do/i } },
  { content: 'What is 3 + 4, then multiply by 5?', expected: { answer: /\b35\b/ } },
];

async function ask(strategy: string, content: string, files: Record<string, string> = {}) {
  const client = await connect();
  for (const [name, body] of Object.entries(files)) {
    const response = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files?name=${name}`, { method: 'POST', body });
    expect(response.status).toBe(201);
  }
  client.chat(content, { agent_mode: true, strategy, agent_max_steps: 20, strategy_options: strategy === 'solver' ? { auto_advance: true } : {} });
  const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
  const completion = events.find((event) => event.update_type === 'agent_completion');
  const answer = String(events.findLast((event) => event.type === 'assistant_message')?.content ?? '');
  return { events, completion, answer };
}

describe.each(ALL)('%s ends grounded', (strategy) => {
  it(`answers the README's request: "${README[strategy][0]}"`, async () => {
    const { completion, answer } = await ask(strategy, README[strategy][0]);
    expect(SUCCESS).toContain(completion?.reason);
    expect(answer).toMatch(README[strategy][1]);
  });

  it.each(WORDINGS)('"$content": the answer right, or unresolved with why', async ({ content, files, expected }) => {
    const { completion, answer } = await ask(strategy, content, files);
    expect(completion, 'the run completed').toBeDefined();
    if ('answer' in expected) {
      expect(SUCCESS, `ended ${String(completion?.reason)}: ${answer}`).toContain(completion?.reason);
      expect(answer).toMatch(expected.answer);
    } else {
      expect(completion?.reason, answer).toBe('unresolved');
      expect(String(completion?.summary)).toMatch(expected.why);
      expect(answer).not.toMatch(/\[UNRESOLVED\]/);
    }
  });
});

describe('roa on a large file', () => {
  it('reads a 3,000-line file in one bounded step: its Observe text summarises it, never the file streamed word by word', async () => {
    const big = Array.from({ length: 3000 }, (_, line) => `Line ${line + 1} of the log: the service answered request ${line + 1} in time.`).join('\n');
    const { events, completion, answer } = await ask('roa', 'Summarize big.log', { 'big.log': big });
    expect(SUCCESS).toContain(completion?.reason);
    const observe = events.find((event) => event.update_type === 'agent_observe');
    expect(String(observe?.content)).toMatch(/I read big\.log: 3000 lines in all, of which I read \d+ words/);
    // The observation is streamed in a bounded number of pieces, not the file's words one by one.
    const pieces = events.filter((event) => event.update_type === 'agent_observe_delta').length;
    expect(pieces).toBeLessThan(200);
    expect(answer).toMatch(/\*\*big\.log\*\*: 3000 lines in all/);
  });
});

describe.each(ALL)('%s reaches write_file and reports usage', (strategy) => {
  it('"Write \'hello\' to out.txt" asks for approval; approved, the file is written and the run answers, its tokens counted at no cost', async () => {
    const client = await connect();
    client.chat("Write 'hello' to out.txt", {
      agent_mode: true,
      strategy,
      agent_max_steps: 20,
      strategy_options: strategy === 'solver' ? { auto_advance: true } : {},
    });
    const approval = await client.waitFor('agent_request_input', { timeoutMs: 30_000 });
    expect(approval).toMatchObject({ kind: 'approval', tool: 'write_file', arguments: { name: 'out.txt', content: 'hello' } });
    client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'approve' } });
    const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
    const completion = events.find((event) => event.update_type === 'agent_completion') as Event & { usage: { prompt_tokens: number } };
    expect(SUCCESS).toContain(completion.reason);
    expect(String(events.findLast((event) => event.type === 'assistant_message')?.content)).toMatch(/out\.txt/);
    const file = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files/out.txt`);
    expect(await file.text()).toBe('hello');
    expect(events.filter((event) => event.update_type === 'agent_usage').length).toBeGreaterThan(0);
    expect(completion.usage.prompt_tokens).toBeGreaterThan(0);
    expect(completion.cost_usd).toBe(0);
  });
});

it('a denied write ends unresolved, saying the file was not written', async () => {
  const client = await connect();
  client.chat("Write 'hello' to out.txt", { agent_mode: true, strategy: 'roa' });
  const approval = await client.waitFor('agent_request_input', { timeoutMs: 30_000 });
  client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'deny', reason: 'not now' } });
  const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
  expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({
    reason: 'unresolved',
    summary: expect.stringMatching(/out\.txt was not written: The person denied this call: not now/),
  });
});

it('autonomous works the four links of the README chain within the default ten iterations', async () => {
  const client = await connect();
  client.chat('First compute 12*7, then add 15, divide by 3, subtract 4', { agent_mode: true, strategy: 'autonomous', agent_max_steps: 10 });
  const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
  expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'workflow_complete' });
  expect(events.filter((event) => event.update_type === 'agent_turn_start').length).toBeLessThanOrEqual(6);
  expect(String(events.findLast((event) => event.type === 'assistant_message')?.content)).toMatch(/\*\*29\*\*/);
});

it('an unresolved run may be continued: Continue starts a run that goes on from it', async () => {
  const client = await connect();
  client.chat('Compute 10/0 please', { agent_mode: true, strategy: 'roa' });
  const first = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
  expect(first.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'unresolved' });
  const from = client.events.length;
  client.send({ type: 'agent_control', action: 'resume', extra_steps: 2 });
  const second = (await client.untilComplete({ from, timeoutMs: 60_000 })) as Event[];
  expect(second.find((event) => event.type === 'error')).toBeUndefined();
  const firstRun = first.find((event) => event.update_type === 'agent_start')?.run_id;
  expect(second.find((event) => event.update_type === 'agent_start')).toMatchObject({ resumed_from: firstRun });
  expect(second.filter((event) => event.update_type === 'agent_completion')).toHaveLength(1);
});
