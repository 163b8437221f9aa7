import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise({ LLM_MODEL: 'scripted-model' }, { eachTest: true });

describe('the session message', () => {
  it('names the session, the model, the limits and the tools', () => {
    const session = stepwise.client.session;
    expect(session).toMatchObject({
      type: 'session',
      protocol: 1,
      model: 'scripted-model',
      demo: false,
      resumed: false,
      last_seq: 0,
      limits: { max_steps_default: 10, max_steps_limit: 50 },
    });
    expect(String(session.session_id)).toMatch(/^[0-9a-f-]{36}$/);
    expect((session.tools as { name: string; source: string }[]).map(({ name, source }) => [name, source])).toEqual([
      ['calculator', 'builtin'],
      ['current_time', 'builtin'],
      ['list_files', 'builtin'],
      ['read_file', 'builtin'],
      ['write_file', 'builtin'],
      ['notepad', 'builtin'],
    ]);
    expect(session.mcp_servers).toEqual([]);
  });

  it('answers GET /api/health', async () => {
    const response = await fetch(`${stepwise.server.url}/api/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });
});

describe('bad stepwise.client messages', () => {
  const cases: [string, string, string][] = [
    ['not JSON', '{"type": "chat", ', 'invalid_json'],
    ['not an object', '[1, 2, 3]', 'invalid_message'],
    ['without a type', '{"content": "hi"}', 'invalid_message'],
    ['of an unknown type', '{"type": "launch_missiles"}', 'unknown_type'],
    ['chat without content', '{"type": "chat"}', 'invalid_message'],
    ['chat with empty content', '{"type": "chat", "content": "   "}', 'invalid_message'],
    ['chat with a wrong field type', '{"type": "chat", "content": "hi", "agent_mode": "yes"}', 'invalid_message'],
    ['chat with fractional max steps', '{"type": "chat", "content": "hi", "agent_max_steps": 2.5}', 'invalid_message'],
    ['an unknown control action', '{"type": "agent_control", "action": "explode"}', 'invalid_message'],
    ['input without content', '{"type": "agent_user_input"}', 'invalid_message'],
    ['an agent run with an unknown tool', '{"type": "chat", "content": "hi", "agent_mode": true, "tools": ["nope"]}', 'unknown_tool'],
  ];

  it.each(cases)('rejects a message %s with a typed error and keeps the socket usable', async (_name, frame, code) => {
    stepwise.client.send(frame);
    const error = await stepwise.client.waitFor('error');
    expect(error).toMatchObject({ type: 'error', code });
    expect(String(error.message).length).toBeGreaterThan(5);
    expect(stepwise.llm.requests).toHaveLength(0);

    stepwise.llm.enqueue({ text: 'Still fine.' });
    stepwise.client.chat('Hello');
    const events = await stepwise.client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['assistant_message', 'response_complete']);
  });

  it('rejects binary frames', async () => {
    stepwise.client.socket.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(await stepwise.client.waitFor('error')).toMatchObject({ code: 'binary_not_supported' });
  });

  it('closes the socket with 1009 on a frame over 1 MiB, and the stepwise.server keeps serving', async () => {
    stepwise.client.send(JSON.stringify({ type: 'chat', content: 'x'.repeat(1024 * 1024 + 10) }));
    expect(await stepwise.client.closed()).toBe(1009);
    const fresh = await TestClient.connect(stepwise.server.wsUrl);
    stepwise.llm.enqueue({ text: 'Alive.' });
    fresh.chat('Hello');
    expect(summarize(await fresh.untilComplete())).toEqual(['assistant_message', 'response_complete']);
    await fresh.close();
  });
});

describe('plain chat', () => {
  it('streams the answer and remembers the conversation', async () => {
    stepwise.llm.enqueue({ text: 'Nice to meet you, Ada.' }, { text: 'Your name is Ada.' });
    stepwise.client.chat('My name is Ada.');
    const first = await stepwise.client.untilComplete();
    expect(
      first
        .filter((event) => event.type === 'assistant_delta')
        .map((event) => event.delta)
        .join(''),
    ).toBe('Nice to meet you, Ada.');
    expect(summarize(first)).toEqual(['assistant_message', 'response_complete']);

    const from = stepwise.client.events.length;
    stepwise.client.chat('What is my name?');
    const second = await stepwise.client.untilComplete({ from });
    expect(second.find((event) => event.type === 'assistant_message')!.content).toBe('Your name is Ada.');
    const messages = stepwise.llm.requests[1]!.body.messages.map(({ role, content }) => [role, content]);
    expect(messages.slice(1)).toEqual([
      ['user', 'My name is Ada.'],
      ['assistant', 'Nice to meet you, Ada.'],
      ['user', 'What is my name?'],
    ]);
    expect(stepwise.llm.requests[1]!.toolNames).toEqual([]);
  });

  it('can be stopped mid-answer', async () => {
    stepwise.llm.enqueue({ hang: true });
    stepwise.client.chat('Tell me a long story');
    const request = await stepwise.llm.waitFor(() => true);
    stepwise.client.send({ type: 'agent_control', action: 'stop' });
    expect(summarize(await stepwise.client.untilComplete())).toEqual(['response_complete']);
    await stepwise.llm.waitForAbort(request);
  });
});

describe('reconnecting', () => {
  it('replays the log after after_seq, then goes on live, with no gap and no duplicate', async () => {
    stepwise.llm.enqueue({ text: reasonText('Ask first.') }, { toolCalls: [{ id: 'ask', name: 'request_input', arguments: { question: 'Which unit?' } }] });
    stepwise.client.chat('Convert it', { agent_mode: true });
    const question = await stepwise.client.waitFor('agent_request_input');
    const sessionId = String(stepwise.client.session.session_id);
    const seenSeq = Number(question.seq) - 2;
    await stepwise.client.close();

    const rejoined = await TestClient.connect(stepwise.server.wsUrl, { session_id: sessionId, after_seq: seenSeq });
    try {
      expect(rejoined.session).toMatchObject({ session_id: sessionId, resumed: true, last_seq: question.seq });
      await rejoined.waitFor('agent_request_input');
      stepwise.llm.enqueue({ text: observeText('Metres.', { final_answer: 'In metres.' }) });
      rejoined.send({ type: 'agent_user_input', content: 'metres' });
      await rejoined.untilComplete();
      const seqs = rejoined.logged.map((event) => Number(event.seq));
      expect(seqs[0]).toBe(seenSeq + 1);
      expect(seqs).toEqual(seqs.map((_, index) => seenSeq + 1 + index));
      expect(rejoined.logged.at(-1)!.type).toBe('response_complete');
    } finally {
      await rejoined.close();
    }
  });

  it('starts a new session for an unknown session id', async () => {
    const stranger = await TestClient.connect(stepwise.server.wsUrl, {
      session_id: '00000000-0000-4000-8000-000000000000',
      after_seq: 3,
    });
    expect(stranger.session.resumed).toBe(false);
    expect(stranger.session.session_id).not.toBe('00000000-0000-4000-8000-000000000000');
    await stranger.close();
  });

  it('keeps a run going while its socket is away', async () => {
    stepwise.llm.enqueue({ text: reasonText('Slow.'), delayMs: 150 }, { text: 'No tool.' }, { text: observeText('ok', { final_answer: 'Done meanwhile.' }) });
    stepwise.client.chat('Work while I am gone', { agent_mode: true });
    await stepwise.client.waitFor('agent_turn_start');
    const sessionId = String(stepwise.client.session.session_id);
    stepwise.client.socket.terminate();
    await stepwise.llm.waitFor((request) => request.phase === 'observe');
    // The run ends while no socket is attached.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const detail = await (await fetch(`${stepwise.server.url}/api/sessions/${sessionId}`)).json();
      if (detail.runs.length > 0 && detail.runs.every((run: { status: string }) => run.status !== 'running')) break;
      if (Date.now() > deadline) throw new Error(`the run did not end: ${JSON.stringify(detail.runs)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const back = await TestClient.connect(stepwise.server.wsUrl, { session_id: sessionId, after_seq: 0 });
    try {
      const events = await back.untilComplete();
      expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Done meanwhile.');
    } finally {
      await back.close();
    }
  });
});

describe('a socket that sends before the session is open', () => {
  it('handles frames in order once the session is ready', async () => {
    const socket = new WebSocket(stepwise.server.wsUrl);
    const received: { type: string; code?: string }[] = [];
    const bothArrived = new Promise<void>((resolve) =>
      socket.on('message', (data) => {
        received.push(JSON.parse(data.toString()));
        if (received.length === 2) resolve();
      }),
    );
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send('nope');
    await bothArrived;
    expect(received.map((event) => event.code ?? event.type)).toEqual(['session', 'invalid_json']);
    socket.close();
  });
});

describe('awkward text', () => {
  it('takes messages with NUL and other control characters, in plain chat and agent runs', async () => {
    stepwise.llm.enqueue({ text: 'Got it.' });
    stepwise.client.chat('\u0000');
    expect(summarize(await stepwise.client.untilComplete())).toEqual(['assistant_message', 'response_complete']);
    stepwise.llm.enqueue({ text: reasonText('Fine.', { finish: true }) }, { text: observeText('ok', { final_answer: 'Done \u0000 too.' }) });
    const from = stepwise.client.events.length;
    stepwise.client.chat('a\u0000b\u0007c', { agent_mode: true });
    const events = await stepwise.client.untilComplete({ from });
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Done \u0000 too.');
    const sessions = await (await fetch(`${stepwise.server.url}/api/sessions`)).json();
    expect(sessions.sessions.find((session: { id: string }) => session.id === stepwise.client.session.session_id).title).toBe('Untitled chat');
  });
});
