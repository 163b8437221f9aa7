// The demo model computes, it never guesses: every strategy answers a chained calculation and a
// two-part request correctly, and no wrong answer ends as a success.
import { afterEach, describe, expect, it } from 'vitest';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let server: TestServer | undefined;
let client: TestClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = server = undefined;
});

type Event = Record<string, unknown>;
const CHAIN = 'First compute 12*7, then add 15, divide by 3, subtract 4';
const ALL = ['roa', 'plan_execute', 'autonomous', 'solver', 'research'];

async function ask(strategy: string, content: string, options: Record<string, unknown> = {}) {
  server ??= await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
  client = await TestClient.connect(server.wsUrl);
  client.chat(content, { agent_mode: true, strategy, agent_max_steps: 20, ...(Object.keys(options).length ? { strategy_options: options } : {}) });
  const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
  const answer = String(events.findLast((event) => event.type === 'assistant_message')?.content ?? '');
  return { events, answer, ending: summarize(events).at(-2) };
}

describe('the demo model answers a chained calculation correctly in every strategy', () => {
  it.each(ALL)('%s: "First compute 12*7, then add 15, divide by 3, subtract 4" comes to 29, answered', async (strategy) => {
    const { answer, ending } = await ask(strategy, CHAIN);
    expect(ending).toBe(strategy === 'autonomous' ? 'agent_completion:workflow_complete' : 'agent_completion:answered');
    expect(answer).toMatch(/\*\*29\*\*/);
    expect(answer).not.toMatch(/\*\*(84|99|33)\*\*/);
  });

  it('solver: its evaluator fails a wrong answer and the orchestrator says "checked" only of a checked one', async () => {
    const { events, answer } = await ask('solver', CHAIN);
    const evaluations = events
      .filter((event) => event.update_type === 'agent_stage_complete' && event.stage === 'expert_evaluator')
      .map((event) => String(event.content));
    expect(evaluations.at(-1)).toMatch(/correct: I worked the problem through to 29/);
    expect(answer).toMatch(/^\*\*29\*\*/);
    expect(answer).toMatch(/checked/);
  });

  it.each(ALL)('%s: "What time is it, and what is 2^10?" answers both parts', async (strategy) => {
    const { answer, ending } = await ask(strategy, 'What time is it, and what is 2^10?');
    expect(answer).toMatch(/\*\*1024\*\*/);
    expect(answer).toMatch(/It is now \*\*\d{4}-\d\d-\d\dT\d\d:\d\d/);
    expect(ending).toMatch(/answered|workflow_complete/);
  });

  it('plan_execute plans one step per part: four links of a chain are four steps, and nothing else', async () => {
    const { events, answer } = await ask('plan_execute', CHAIN);
    const plans = events.filter((event) => event.update_type === 'agent_plan') as Array<{ steps: Array<{ goal: string }> }>;
    expect(plans).toHaveLength(1);
    expect(plans[0]!.steps.map((step) => step.goal)).toEqual([
      'Compute 12*7',
      'Compute (12*7) + 15',
      'Compute ((12*7) + 15) / 3',
      'Compute (((12*7) + 15) / 3) - 4',
    ]);
    expect(answer).toMatch(/^`\(\(\(12\*7\) \+ 15\) \/ 3\) - 4` = \*\*29\*\*\./);
    const two = await ask('plan_execute', 'What time is it, and what is 2^10?');
    expect((two.events.find((event) => event.update_type === 'agent_plan') as { steps: Array<{ goal: string }> }).steps.map((step) => step.goal)).toEqual([
      'Compute 2^10',
      'Read the current time',
    ]);
  });

  it('autonomous writes a to-do for each part of a multi-part request and works through them', async () => {
    const { events } = await ask('autonomous', 'What time is it, and what is 2^10?');
    const lists = events.filter((event) => event.update_type === 'agent_todos') as Array<{ todos: Array<{ title: string; status: string }> }>;
    expect(lists[0]!.todos.map((todo) => todo.title)).toEqual(['Work out 2^10', 'Read the current time']);
    expect(lists.at(-1)!.todos.every((todo) => todo.status === 'completed')).toBe(true);
    const chain = await ask('autonomous', CHAIN);
    const chainLists = chain.events.filter((event) => event.update_type === 'agent_todos') as Array<{ todos: Array<{ title: string }> }>;
    expect(chainLists[0]!.todos.map((todo) => todo.title)).toEqual(['Compute 12*7', 'Add 15', 'Divide by 3', 'Subtract 4']);
  });
});

describe('the demo model asks when a request is vague, in every strategy, and acts on the answer', () => {
  it.each(ALL)('%s: "help me" gets a question; "please work out 2^10" then comes to 1024', async (strategy) => {
    server ??= await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
    client = await TestClient.connect(server.wsUrl);
    client.send({ type: 'todos_set', todos: [] });
    await client.waitFor('agent_todos');
    const from = client.events.length;
    client.chat('help me', { agent_mode: true, strategy, agent_max_steps: 20 });
    const question = await client.waitFor('agent_request_input', { from, timeoutMs: 60_000 });
    expect(String(question.question)).toMatch(/what you need with "help me"\?/);
    client.send({ type: 'agent_user_input', content: 'please work out 2^10', question_id: question.question_id });
    const events = (await client.untilComplete({ from, timeoutMs: 60_000 })) as Event[];
    expect(String(events.findLast((event) => event.type === 'assistant_message')?.content)).toMatch(/\*\*1024\*\*/);
    expect(summarize(events).at(-2)).toMatch(/answered|natural_stop|workflow_complete/);
  });
});

describe('the demo model summarizes files truthfully in every strategy', () => {
  const upload = async (name: string, body: string) => {
    const response = await fetch(`${server!.url}/api/sessions/${client!.session.session_id}/files?name=${name}`, { method: 'POST', body });
    expect(response.status).toBe(201);
  };

  async function askAbout(strategy: string, content: string, files: Record<string, string>) {
    server ??= await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
    client = await TestClient.connect(server.wsUrl);
    client.send({ type: 'todos_set', todos: [] });
    await client.waitFor('agent_todos');
    for (const [name, body] of Object.entries(files)) await upload(name, body);
    const from = client.events.length;
    client.chat(content, { agent_mode: true, strategy, agent_max_steps: 20 });
    const events = (await client.untilComplete({ from, timeoutMs: 60_000 })) as Event[];
    return String(events.findLast((event) => event.type === 'assistant_message')?.content ?? '');
  }

  const small = '# Notes\nThe launch is on Friday.\nBring the slides.\n';
  const big = `${Array.from({ length: 3000 }, (_, index) => `Line ${index + 1} of the log.`).join('\n')}\n`;

  it.each(ALL)('%s: an attached file is summarized with its real line count, never reported missing', async (strategy) => {
    const answer = await askAbout(strategy, 'summarize small.txt and big.txt', { 'small.txt': small, 'big.txt': big });
    expect(answer).not.toMatch(/no (such )?file/i);
    expect(answer).toMatch(/\*\*small\.txt\*\*: 3 lines/);
  });

  it.each(ALL)('%s: a 3,000-line file is summarized as 3000 lines', async (strategy) => {
    const answer = await askAbout(strategy, 'summarize big.txt', { 'big.txt': big });
    expect(answer).toMatch(/\*\*big\.txt\*\*: 3000 lines in all/);
  });

  it.each(ALL)('%s: a file that is not there is said to be missing', async (strategy) => {
    const answer = await askAbout(strategy, 'summarize nothere.txt', {});
    expect(answer).toMatch(/nothere\.txt/);
    expect(answer).toMatch(/no such file|no file|not there|missing|Attach/i);
  });
});
