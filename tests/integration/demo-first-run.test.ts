import { afterEach, describe, expect, it } from 'vitest';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let server: TestServer | undefined;
let client: TestClient | undefined;

afterEach(async () => {
  await client?.close().catch(() => undefined);
  await server?.close();
  server = undefined;
  client = undefined;
});

async function run(content: string, options: Record<string, unknown> = {}) {
  server = await startStepwise();
  const connected = await TestClient.connect(server.wsUrl);
  client = connected;
  connected.chat(content, { agent_mode: true, ...options });
  return connected.untilComplete({ timeoutMs: 30_000 });
}

describe('the demo model on a first run', () => {
  it('works a chained calculation over several visible steps, one calculator call each, to the right answer', async () => {
    const events = await run('First compute 12*7, then add 15, divide by 3, subtract 4');
    const calls = events.filter((event) => event.type === 'tool_start').map((event) => (event.arguments as { expression: string }).expression);
    expect(calls).toEqual(['12*7', '84 + 15', '99 / 3', '33 - 4']);
    expect(events.filter((event) => event.type === 'tool_complete').map((event) => String(event.result))).toEqual(['84', '99', '33', '29']);
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(String(events.find((event) => event.type === 'assistant_message')?.content)).toContain('**29**');
    expect(events.filter((event) => event.update_type === 'agent_observe').length).toBe(4);
  });

  it('says in one step that a needed tool is not enabled, instead of looping to the cap', async () => {
    const events = await run('What is 9*9?', { tools: ['current_time'], agent_max_steps: 5 });
    expect(events.filter((event) => event.update_type === 'agent_turn_start')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'tool_start')).toEqual([]);
    const answer = String(events.find((event) => event.type === 'assistant_message')?.content);
    expect(answer).toMatch(/calculator tool is needed but not enabled/);
    expect(summarize(events).at(-2)).toBe('agent_completion:unresolved');
  });

  it('says plainly that a file the message names is not in the chat, while answering the rest', async () => {
    const events = await run('What is 6*7, what time is it, and summarize notes.txt');
    const answer = String(events.find((event) => event.type === 'assistant_message')?.content);
    expect(answer).toContain('**42**');
    expect(answer).toContain('It is now');
    expect(answer).toMatch(/^\*\*Could not answer:\*\* There is no file notes\.txt in this chat/);
    expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({
      reason: 'unresolved',
      summary: 'There is no file notes.txt in this chat to read.',
    });
  });

  it('summarizes a file instead of echoing it with the tool’s header line', async () => {
    server = await startStepwise();
    const connected = await TestClient.connect(server.wsUrl);
    client = connected;
    const text = '# Plan\nShip the store first. Then the kernel.\n\n# Risks\nTime is short.\n';
    const upload = await fetch(`${server.url}/api/sessions/${connected.session.session_id}/files?name=notes.txt`, { method: 'POST', body: text });
    expect(upload.status).toBe(201);
    await connected.waitFor('file_saved');
    connected.chat('summarize notes.txt', { agent_mode: true });
    const events = await connected.untilComplete({ timeoutMs: 30_000 });
    const answer = String(events.find((event) => event.type === 'assistant_message')?.content);
    expect(answer).not.toMatch(/bytes \d+-\d+ of \d+/);
    expect(answer).toContain('Sections: Plan; Risks.');
    expect(answer).toContain('It begins: Ship the store first. Then the kernel.');
    // The file's real line count, the blank line included.
    expect(answer).toMatch(/5 lines, \d+ words/);
  });
});
