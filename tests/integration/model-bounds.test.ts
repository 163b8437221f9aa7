import { configFromEnv, type CompletionRequest, type Logger, ModelError, OpenAiLlmClient } from '@stepwise/backend';
import { describe, expect, it, vi } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize, answeredInOneStep } from '../helpers/ws-client.ts';

const CAP = 5_000;
const NOTE = '\n\n[Reply cut at 5,000 characters: LLM_MAX_OUTPUT_CHARS]';

const { start, open } = useScriptedStepwise();

/** The one event of this type (or agent update_type) in `events`. */
function only(events: Record<string, unknown>[], kind: string): Record<string, unknown> {
  const found = events.filter((event) => (event.update_type ?? event.type) === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

function deltaText(events: Record<string, unknown>[], kind: string): string {
  return events
    .filter((event) => (event.update_type ?? event.type) === kind)
    .map((event) => String(event.delta))
    .join('');
}

describe('the output cap (LLM_MAX_OUTPUT_CHARS)', () => {
  it('cuts a streamed chat reply at LLM_MAX_OUTPUT_CHARS and aborts the upstream request', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP) });
    llm.enqueue({ text: 'x'.repeat(4_000_000), chunkChars: 1_000, chunkDelayMs: 1 });
    client.chat('Write forever');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['assistant_message', 'response_complete']);
    expect(only(events, 'assistant_message').content).toBe('x'.repeat(CAP) + NOTE);
    // The preview stops at the cap too, and ends with the same note.
    expect(deltaText(events, 'assistant_delta')).toBe('x'.repeat(CAP) + NOTE);
    await llm.waitForAbort(llm.requests[0]!);
    expect(llm.requests).toHaveLength(1);

    // The session goes on, and nothing more arrives for the cut answer.
    const from = client.events.length;
    llm.enqueue({ text: 'Short now.' });
    client.chat('Again');
    expect(summarize(await client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
    expect(client.events.filter((event) => event.type === 'response_complete')).toHaveLength(2);
  });

  it("cuts an agent's streamed reason at LLM_MAX_OUTPUT_CHARS, and the run goes on to an answer", async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP) });
    llm.enqueue(
      { text: 'y'.repeat(3_000_000), chunkChars: 1_000, chunkDelayMs: 1 },
      { text: 'No tool needed.' },
      { text: observeText('Enough.', { final_answer: 'Done.' }) },
    );
    client.chat('Think forever', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(answeredInOneStep());
    expect(only(events, 'agent_reason').content).toBe('y'.repeat(CAP) + NOTE);
    expect(deltaText(events, 'agent_reason_delta').length).toBeLessThanOrEqual(CAP + NOTE.length);
    await llm.waitForAbort(llm.requests[0]!);
    expect(llm.requests.map((request) => request.aborted)).toEqual([true, false, false]);
  });

  it('drops a tool call whose arguments pass LLM_MAX_OUTPUT_CHARS instead of running it', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP) });
    llm.enqueue(
      { text: reasonText('I will add many ones.', { tools_to_consider: ['calculator'] }) },
      { text: 'Adding now.', toolCalls: [{ name: 'calculator', arguments: { expression: `1${'+1'.repeat(6_000)}` } }] },
      { text: observeText('The sum was too long.', { final_answer: 'Too long to add.' }) },
    );
    client.chat('Add them', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(answeredInOneStep());
    // The observe call sees the act's text with the note, and no call without a result.
    const observe = llm.requests[2]!.body.messages;
    expect(observe.some((message) => message.content === `Adding now.${NOTE}`)).toBe(true);
    expect(observe.some((message) => message.tool_calls !== undefined || message.role === 'tool')).toBe(false);
  });

  it('ends the answer with an error when nothing usable fits under LLM_MAX_OUTPUT_CHARS', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP), LLM_MAX_RETRIES: '2' });
    llm.enqueue(
      { text: reasonText('Plan.', { tools_to_consider: ['calculator'] }) },
      { toolCalls: [{ name: 'calculator', arguments: { expression: `1${'+1'.repeat(6_000)}` } }] },
    );
    client.chat('Add them', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_reason:1', 'agent_error:1', 'response_complete']);
    expect(String(only(events, 'agent_error').message)).toMatch(/passed 5,000 characters \(LLM_MAX_OUTPUT_CHARS\)/);
    expect(llm.phases()).toEqual(['reason', 'act']);
  });

  it('refuses a whole reply (LLM_STREAMING=false) larger than LLM_MAX_OUTPUT_CHARS allows, without retrying or storing it', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP), LLM_STREAMING: 'false', LLM_MAX_RETRIES: '2' });
    llm.enqueue({ text: 'z'.repeat(4_000_000), bodyChunkChars: 16_384, chunkDelayMs: 1 });
    client.chat('Write forever');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['error:model_error', 'response_complete']);
    expect(String(only(events, 'error').message)).toMatch(/^The model's reply was larger than [\d,]+ bytes.*LLM_MAX_OUTPUT_CHARS/);
    await llm.waitForAbort(llm.requests[0]!);
    expect(llm.requests).toHaveLength(1);
    for (const event of client.events.filter((event) => event.type !== 'session')) expect(JSON.stringify(event).length).toBeLessThan(2_000);
  });

  it('refuses an oversized whole reply in an agent run with agent_error', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP), LLM_STREAMING: 'false' });
    llm.enqueue({ text: 'z'.repeat(4_000_000), bodyChunkChars: 16_384, chunkDelayMs: 1 });
    client.chat('Think forever', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(String(only(events, 'agent_error').message)).toMatch(/larger than .*LLM_MAX_OUTPUT_CHARS/);
    await llm.waitForAbort(llm.requests[0]!);
  });

  it('cuts a whole reply that fits the byte limit but passes LLM_MAX_OUTPUT_CHARS, with the same note', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP), LLM_STREAMING: 'false' });
    llm.enqueue({ text: 'w'.repeat(CAP + 3_000) });
    client.chat('Write a lot');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['assistant_message', 'response_complete']);
    expect(only(events, 'assistant_message').content).toBe('w'.repeat(CAP) + NOTE);
  });
});

describe('stalled and endless streams', () => {
  it('ends the answer when the stream stalls (LLM_STREAM_IDLE_TIMEOUT_MS) and aborts the upstream request', async () => {
    const { llm, client } = await start({ LLM_STREAM_IDLE_TIMEOUT_MS: '300' });
    llm.enqueue({ text: 'Hello there, this is a long answer', stallAfterChunks: 2 });
    client.chat('Hello');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['error:model_error', 'response_complete']);
    expect(String(only(events, 'error').message)).toMatch(/The model stream stalled: nothing for 0\.3 s/);
    await llm.waitForAbort(llm.requests[0]!);
    // Text was already shown, so the call is not repeated.
    expect(llm.requests).toHaveLength(1);
  });

  it('retries a stream that stalls before any text, and succeeds', async () => {
    const { llm, client } = await start({ LLM_STREAM_IDLE_TIMEOUT_MS: '300' });
    llm.enqueue({ text: 'Never sent', stallAfterChunks: 1 }, { text: 'Recovered.' });
    client.chat('Hello');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['assistant_message', 'response_complete']);
    expect(only(events, 'assistant_message').content).toBe('Recovered.');
    await llm.waitForAbort(llm.requests[0]!);
  });

  it('ends an endless stream at LLM_TOTAL_TIMEOUT_MS with model_timeout and aborts the upstream request', async () => {
    const { llm, client } = await start({ LLM_TOTAL_TIMEOUT_MS: '1500' });
    llm.enqueue({ text: 'Counting on ', endless: true, chunkDelayMs: 20 });
    client.chat('Count forever');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['error:model_timeout', 'response_complete']);
    expect(String(only(events, 'error').message)).toBe('The model did not finish within 1.5 s (LLM_TOTAL_TIMEOUT_MS)');
    await llm.waitForAbort(llm.requests[0]!);
  });

  it('ends an endless stream at LLM_MAX_OUTPUT_CHARS when that comes first', async () => {
    const { llm, client } = await start({ LLM_MAX_OUTPUT_CHARS: String(CAP) });
    llm.enqueue({ text: 'e'.repeat(1_000), chunkChars: 1_000, endless: true, chunkDelayMs: 1 });
    client.chat('Count forever');
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['assistant_message', 'response_complete']);
    expect(only(events, 'assistant_message').content).toBe('e'.repeat(CAP) + NOTE);
    await llm.waitForAbort(llm.requests[0]!);
  });

  it('counts retries and their waits against LLM_TOTAL_TIMEOUT_MS', async () => {
    const { llm, client } = await start({ LLM_TOTAL_TIMEOUT_MS: '1500', LLM_MAX_RETRIES: '3' });
    llm.enqueue({ status: 503, headers: { 'retry-after': '25' } }, { text: 'Too late.' });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(String(only(events, 'agent_error').message)).toMatch(/LLM_TOTAL_TIMEOUT_MS/);
    expect(llm.requests).toHaveLength(1);
  });

  it('still ends with a plain stop, not a timeout, when the user stops a stalled stream', async () => {
    const { llm, client } = await start({ LLM_STREAM_IDLE_TIMEOUT_MS: '60000', LLM_TOTAL_TIMEOUT_MS: '60000' });
    llm.enqueue({ text: 'Thinking about it', stallAfterChunks: 2 });
    client.chat('Hello', { agent_mode: true });
    await client.waitFor('agent_reason_delta');
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();

    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    await llm.waitForAbort(llm.requests[0]!);
  });
});

describe('reported token usage', () => {
  it('counts a large but valid prompt_tokens (3000000000) as a number against the run budget', async () => {
    const { llm, client } = await start({ AGENT_RUN_TOKEN_BUDGET: '1000000' });
    llm.enqueue({ text: reasonText('Plan.'), rawUsage: { prompt_tokens: 3_000_000_000, completion_tokens: 5 } });
    client.chat('Spend', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:token_budget', 'response_complete']);
    expect(llm.requests).toHaveLength(1);
  });

  it('ignores token counts that are not counts, and the run ends normally', async () => {
    const { llm, client } = await start({ AGENT_RUN_TOKEN_BUDGET: '1000' });
    llm.enqueue(
      { text: reasonText('Plan.', { finish: true }), rawUsage: { prompt_tokens: 'abc', completion_tokens: -5 } },
      { text: observeText('ok', { final_answer: 'Fine.' }), rawUsage: { prompt_tokens: 1.5, completion_tokens: 1e300 } },
    );
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(only(events, 'assistant_message').content).toBe('Fine.');
  });

  it('ends a plain chat answer normally whatever usage the model reports', async () => {
    const { llm, client } = await start({});
    llm.enqueue(
      { text: 'Big.', rawUsage: { prompt_tokens: 3_000_000_000, completion_tokens: 7 } },
      { text: 'Odd.', rawUsage: { prompt_tokens: 'abc', completion_tokens: null } },
    );
    client.chat('One');
    expect(summarize(await client.untilComplete())).toEqual(['assistant_message', 'response_complete']);
    const from = client.events.length;
    client.chat('Two');
    expect(summarize(await client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
  });
});

describe('the model client on its own', () => {
  interface Line {
    level: string;
    object: object;
    message?: string;
  }

  /** A client for the scripted model (a new one unless given), and the log lines it writes. */
  async function modelClient(
    env: Record<string, string> = {},
    endpoint?: ScriptedLlmServer,
  ): Promise<{ llm: ScriptedLlmServer; model: OpenAiLlmClient; lines: Line[] }> {
    const llm = endpoint ?? open(await ScriptedLlmServer.start());
    const lines: Line[] = [];
    const logger: Logger = {
      debug: (object, message) => lines.push({ level: 'debug', object, message }),
      info: (object, message) => lines.push({ level: 'info', object, message }),
      warn: (object, message) => lines.push({ level: 'warn', object, message }),
      error: (object, message) => lines.push({ level: 'error', object, message }),
      child: () => logger,
    };
    const config = configFromEnv({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', LLM_RETRY_BASE_MS: '1', ...env });
    return { llm, model: new OpenAiLlmClient(config, logger), lines };
  }

  function chat(signal = new AbortController().signal, onDelta?: (delta: string) => void): CompletionRequest {
    return { purpose: 'chat', messages: [{ role: 'user', content: 'Hello' }], signal, ...(onDelta ? { onDelta } : {}) };
  }

  it('stops handing out deltas at the cap and marks the result truncated', async () => {
    const { llm, model, lines } = await modelClient({ LLM_MAX_OUTPUT_CHARS: String(CAP) });
    llm.enqueue({ text: 'd'.repeat(2_000_000), chunkChars: 700, chunkDelayMs: 1 });
    const deltas: string[] = [];
    const result = await model.complete(chat(undefined, (delta) => deltas.push(delta)));

    expect(result).toEqual({ text: 'd'.repeat(CAP) + NOTE, toolCalls: [], truncated: true, model: 'gpt-4o-mini', costUsd: null, response: expect.any(Object) });
    expect(deltas.join('')).toBe('d'.repeat(CAP) + NOTE);
    expect(lines.filter((line) => line.level === 'warn').map((line) => line.message)).toEqual(['model reply cut at LLM_MAX_OUTPUT_CHARS']);
    await llm.waitForAbort(llm.requests[0]!);
  });

  it('keeps a tool call that fit whole and drops the one that was cut', async () => {
    const { llm, model } = await modelClient({ LLM_MAX_OUTPUT_CHARS: String(CAP) });
    const replies: ScriptedReply[] = [
      {
        toolCalls: [
          { id: 'call_small', name: 'calculator', arguments: { expression: '1+1' } },
          { id: 'call_huge', name: 'calculator', arguments: { expression: 'x'.repeat(20_000) } },
        ],
      },
    ];
    llm.enqueue(...replies);
    const result = await model.complete(chat());

    expect(result.truncated).toBe(true);
    expect(result.toolCalls).toEqual([{ id: 'call_small', name: 'calculator', arguments: '{"expression":"1+1"}' }]);
  });

  it('passes 3000000000 tokens through as a number, and drops invalid counts with a warning that holds no values', async () => {
    const { llm, model, lines } = await modelClient();
    llm.enqueue(
      { text: 'Big.', rawUsage: { prompt_tokens: 3_000_000_000, completion_tokens: 12 } },
      { text: 'Odd.', rawUsage: { prompt_tokens: 'abc', completion_tokens: 9 } },
    );

    expect((await model.complete(chat())).usage).toEqual({ promptTokens: 3_000_000_000, completionTokens: 12 });
    expect((await model.complete(chat())).usage).toEqual({ promptTokens: 0, completionTokens: 9 });
    const warnings = lines.filter((line) => line.level === 'warn');
    expect(warnings.map((line) => [line.message, line.object])).toEqual([
      ['the model reported an invalid token count; it is ignored', { purpose: 'chat', field: 'prompt_tokens' }],
    ]);
    expect(JSON.stringify(warnings)).not.toContain('abc');
  });

  it("rejects with the signal's reason when stopped, not with a timeout", async () => {
    const { llm, model } = await modelClient({ LLM_TOTAL_TIMEOUT_MS: '60000' });
    llm.enqueue({ text: 'Slowly', stallAfterChunks: 2 });
    const controller = new AbortController();
    const pending = model.complete(chat(controller.signal, () => controller.abort(new Error('user stop'))));
    const error = await pending.then(
      () => undefined,
      (reason: unknown) => reason,
    );

    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ModelError);
    expect((error as Error).name).toBe('AbortError');
    await llm.waitForAbort(llm.requests[0]!);
  });

  it('reads events split by CRLF or CR, with comments and keep-alives between them', async () => {
    const { llm, model } = await modelClient();
    const chunk = (delta: object, finish: string | null = null) => JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] });
    llm.enqueue({
      raw:
        `: keep-alive\r\n\r\ndata: ${chunk({ content: 'Hello' })}\r\n\r\n: ping\rdata: ${chunk({ content: ', world' })}\r\r` +
        `data: ${chunk({}, 'stop')}\n\ndata: [DONE]`,
    });

    expect(await model.complete(chat())).toEqual({
      text: 'Hello, world',
      toolCalls: [],
      model: 'gpt-4o-mini',
      costUsd: null,
      response: { finishReason: 'stop' },
    });
  });

  it('refuses one stream event larger than the output cap allows, without reading the rest', async () => {
    const { llm, model } = await modelClient({ LLM_MAX_OUTPUT_CHARS: String(CAP), LLM_MAX_RETRIES: '2' });
    llm.enqueue({ raw: `data: {"choices":[{"index":0,"delta":{"content":"${'q'.repeat(2_000_000)}` });
    const error = await model.complete(chat()).then(
      () => undefined,
      (reason: unknown) => reason,
    );

    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toMatch(/^The model's reply was larger than [\d,]+ bytes/);
    expect(llm.requests).toHaveLength(1);
  });

  it('reports an error the endpoint sends inside its stream', async () => {
    const { llm, model } = await modelClient({ LLM_MAX_RETRIES: '0' });
    llm.enqueue({ raw: 'data: {"error":{"message":"overloaded"}}\n\n' });
    // What the endpoint said is kept for the logs (detail), never put in the message users see.
    await expect(model.complete(chat())).rejects.toMatchObject({ message: 'The model endpoint reported an error in its stream', detail: 'overloaded' });
  });

  it('clears its clocks on every path: finished, cut, stalled, stopped, refused, out of time', async () => {
    // Odd durations single out the client's own clocks among every other timer in the process.
    const { llm, model } = await modelClient({
      LLM_MAX_OUTPUT_CHARS: String(CAP),
      LLM_STREAM_IDLE_TIMEOUT_MS: '257',
      LLM_TOTAL_TIMEOUT_MS: '54321',
      LLM_MAX_RETRIES: '0',
    });
    const ours = new Set<unknown>();
    const cleared = new Set<unknown>();
    const realSetTimeout = globalThis.setTimeout;
    const realClearTimeout = globalThis.clearTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
      const handle = realSetTimeout(callback, ms);
      if (ms === 257 || ms === 54_321 || ms === 333) ours.add(handle);
      return handle;
    }) as typeof setTimeout);
    vi.spyOn(globalThis, 'clearTimeout').mockImplementation(((handle: Parameters<typeof clearTimeout>[0]) => {
      cleared.add(handle);
      realClearTimeout(handle);
    }) as typeof clearTimeout);
    try {
      llm.enqueue(
        { text: 'Fine.' },
        { text: 'c'.repeat(100_000), chunkChars: 1_000 },
        { text: 'Stalls after this', stallAfterChunks: 2 },
        { text: 'Stopped after this', stallAfterChunks: 2 },
        { status: 400 },
      );
      await model.complete(chat());
      await model.complete(chat());
      await expect(model.complete(chat())).rejects.toThrow(/stalled/);
      const controller = new AbortController();
      await expect(model.complete(chat(controller.signal, () => controller.abort()))).rejects.toMatchObject({ name: 'AbortError' });
      await expect(model.complete(chat())).rejects.toThrow(/answered 400/);
      const { model: hurried } = await modelClient({ LLM_TOTAL_TIMEOUT_MS: '333' }, llm);
      llm.enqueue({ hang: true });
      await expect(hurried.complete(chat())).rejects.toThrow(/LLM_TOTAL_TIMEOUT_MS/);
    } finally {
      vi.restoreAllMocks();
    }

    // A deadline per call (six), and an idle clock for each body that had to wait for the endpoint:
    // at least the two that stalled.
    expect(ours.size).toBeGreaterThanOrEqual(8);
    expect([...ours].filter((handle) => !cleared.has(handle))).toEqual([]);
  });

  it('reports running out of time as ModelError model_timeout', async () => {
    const { llm, model } = await modelClient({ LLM_TOTAL_TIMEOUT_MS: '400' });
    llm.enqueue({ hang: true });
    const error = await model.complete(chat()).then(
      () => undefined,
      (reason: unknown) => reason,
    );

    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe('model_timeout');
    await llm.waitForAbort(llm.requests[0]!);
  });
});
