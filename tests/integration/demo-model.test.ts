import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient, answeredInOneStep } from '../helpers/ws-client.ts';

let server: TestServer;
let client: TestClient;

beforeEach(async () => {
  server = await startStepwise({ LLM_PROVIDER: 'demo' });
  client = await TestClient.connect(server.wsUrl);
});

afterEach(async () => {
  await client?.close();
  await server?.close();
});

describe('the offline demo model', () => {
  it('reads an attached file when the message names it', async () => {
    const upload = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files?name=notes.txt`, {
      method: 'POST',
      body: 'Pack the blue umbrella.',
    });
    expect(upload.status).toBe(201);
    client.chat('Summarize notes.txt for me', { agent_mode: true });
    const events = (await client.untilComplete()).filter((event) => 'seq' in event && event.type !== 'file_saved');
    expect(summarize(events)).toEqual(answeredInOneStep('read_file'));
    expect(String(events.find((event) => event.type === 'assistant_message')!.content)).toContain('Pack the blue umbrella.');
  });

  it('does not mistake a decimal number for a file name', async () => {
    client.chat('What is 3.14*2?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(events.filter((event) => event.type === 'tool_start').map((event) => event.tool_name)).toEqual(['calculator']);
  });

  it('is labelled as the demo in the session message', () => {
    expect(client.session.demo).toBe(true);
    expect(String(client.session.model)).toMatch(/demo/i);
  });

  it('uses the calculator for arithmetic in agent mode', async () => {
    client.chat('What is (17+25)*3?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(answeredInOneStep('calculator'));
    expect(events.find((event) => event.type === 'tool_complete')!.result).toBe(126);
    expect(String(events.find((event) => event.type === 'assistant_message')!.content)).toContain('126');
  });

  it('asks a clarifying question when the request is vague, and acts on the answer', async () => {
    client.chat('help me', { agent_mode: true });
    const question = await client.waitFor('agent_request_input');
    expect(String(question.question)).toMatch(/\?/);
    client.send({ type: 'agent_user_input', content: 'please work out 2^10' });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'tool_complete' && event.tool_name === 'calculator')!.result).toBe(1024);
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
  });

  it('tells the time with the clock tool', async () => {
    client.chat('What time is it right now?', { agent_mode: true });
    const events = await client.untilComplete();
    const result = String(events.find((event) => event.type === 'tool_complete')!.result);
    expect(Date.parse(result)).not.toBeNaN();
  });

  it('answers plain chat plausibly and says how to use a real model', async () => {
    client.chat('Who wrote Hamlet?');
    const events = await client.untilComplete();
    expect(events.some((event) => event.type === 'assistant_delta')).toBe(true);
    expect(String(events.find((event) => event.type === 'assistant_message')!.content)).toMatch(/OPENAI_BASE_URL/);
  });
});
