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

async function ask(strategy: string, content: string, options: Record<string, unknown> = {}) {
  server ??= await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
  client = await TestClient.connect(server.wsUrl);
  client.chat(content, { agent_mode: true, strategy, agent_max_steps: 20, ...(Object.keys(options).length ? { strategy_options: options } : {}) });
  const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
  const answer = String(events.findLast((event) => event.type === 'assistant_message')?.content ?? '');
  return { events, answer, ending: summarize(events).at(-2) };
}

describe('the demo model answers a chained calculation correctly in every strategy', () => {
  it.each(['roa', 'plan_execute', 'autonomous', 'solver'])('%s: "First compute 12*7, then add 15, divide by 3, subtract 4" comes to 29, answered', async (strategy) => {
    const { answer, ending } = await ask(strategy, CHAIN);
    expect(ending).toBe(strategy === 'autonomous' ? 'agent_completion:natural_stop' : 'agent_completion:answered');
    expect(answer).toMatch(/\*\*29\*\*/);
    expect(answer).not.toMatch(/\*\*(84|99|33)\*\*/);
  });

  it('solver: its evaluator fails a wrong answer and the orchestrator says "checked" only of a checked one', async () => {
    const { events, answer } = await ask('solver', CHAIN);
    const evaluations = events.filter((event) => event.update_type === 'agent_stage_complete' && event.stage === 'expert_evaluator').map((event) => String(event.content));
    expect(evaluations.at(-1)).toMatch(/correct: I worked the problem through to 29/);
    expect(answer).toMatch(/^\*\*29\*\*/);
    expect(answer).toMatch(/checked/);
  });

  it.each(['roa', 'plan_execute', 'autonomous'])('%s: "What time is it, and what is 2^10?" answers both parts', async (strategy) => {
    const { answer } = await ask(strategy, 'What time is it, and what is 2^10?');
    expect(answer).toMatch(/\b1024\b/);
    expect(answer).toMatch(/\d{1,2}:\d{2}/);
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
  const big = Array.from({ length: 3000 }, (_, index) => `Line ${index + 1} of the log.`).join('\n') + '\n';

  it.each(['roa', 'plan_execute', 'autonomous'])('%s: an attached file is summarized with its real line count, never reported missing', async (strategy) => {
    const answer = await askAbout(strategy, 'summarize small.txt and big.txt', { 'small.txt': small, 'big.txt': big });
    expect(answer).not.toMatch(/no (such )?file/i);
    expect(answer).toMatch(/\*\*small\.txt\*\*: 3 lines/);
  });

  it.each(['roa', 'plan_execute', 'autonomous'])('%s: a 3,000-line file is summarized as 3000 lines', async (strategy) => {
    const answer = await askAbout(strategy, 'summarize big.txt', { 'big.txt': big });
    expect(answer).toMatch(/\*\*big\.txt\*\*: 3000 lines in all/);
  });

  it.each(['roa', 'plan_execute', 'autonomous'])('%s: a file that is not there is said to be missing', async (strategy) => {
    const answer = await askAbout(strategy, 'summarize nothere.txt', {});
    expect(answer).toMatch(/nothere\.txt/);
    expect(answer).toMatch(/no such file|not there|missing|Attach/i);
  });
});

