// A continued run interrupted by a restart finishes by itself, logging and saving nothing twice.
import { openSqliteStore } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import type { TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const open = closeAfterEach();

describe('restart of a continued run', () => {
  it('finishes it without logging the first run’s steps again or saving its messages twice', async () => {
    const llm = await ScriptedLlmServer.start();
    open(llm);
    const store = await openSqliteStore(':memory:');
    open(store);
    let holdAt = 2; // observe with this many tool results hangs
    llm.respond((request) => {
      const results = request.body.messages.filter((message) => message.role === 'tool').length;
      if (request.phase === 'observe' && results === holdAt) return { hang: true };
      if (request.phase === 'reason') return { text: reasonText(`Add one (have ${results}).`) };
      if (request.phase === 'act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` } }] };
      return results >= 4
        ? { text: observeText('Enough.', { final_answer: `Counted to ${results}.`, should_continue: false }) }
        : { text: observeText(`At ${results}.`, { should_continue: true }) };
    });
    const first: TestServer = await (await import('../helpers/stepwise.ts')).startStepwise(
      { LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k' },
      undefined,
      store,
    );
    open(first);
    const client = await TestClient.connect(first.wsUrl);
    open(client);
    client.chat('Count to four', { agent_mode: true, agent_max_steps: 8, tools: ['calculator'] });
    await llm.waitFor((request) => request.phase === 'observe' && request.body.messages.filter((m) => m.role === 'tool').length === 2, 10_000);
    client.send({ type: 'agent_control', action: 'stop' });
    await client.untilComplete();

    // Run 2 continues run 1; the "server dies" while run 2 waits on step 3's observe.
    holdAt = 3;
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume', extra_steps: 5 });
    await llm.waitFor((request) => request.phase === 'observe' && request.body.messages.filter((m) => m.role === 'tool').length === 3, 10_000);
    // Step 3's start reaches the client in its own time: events go out once committed, and the commit
    // overlaps the next model request (a run's progress may also wait SOCKET_BATCH_MS), so on a busy
    // machine it can arrive after the request the test waited for.
    await client.next((event) => event.update_type === 'agent_turn_start' && event.step === 3, { from, timeoutMs: 10_000 });
    const run2 = client.events.slice(from).find((event) => event.update_type === 'agent_start')!.run_id as string;
    expect(summarize(client.events.slice(from)).filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3']);
    const sessionId = String(client.session.session_id);
    await client.close();

    // A second server on the same store recovers the interrupted run (the first one is never told).
    holdAt = -1;
    const { startStepwise } = await import('../helpers/stepwise.ts');
    const recovering = await startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k' }, undefined, store);
    open(recovering);
    const rejoined = await TestClient.connect(recovering.wsUrl, { session_id: sessionId, after_seq: 0 });
    open(rejoined);
    await rejoined.next((event) => event.type === 'response_complete' && event.run_id === run2, { timeoutMs: 15_000 });
    const run2Events = rejoined.logged.filter((event) => event.run_id === run2);
    const turnStarts = summarize(run2Events).filter((name) => name.startsWith('agent_turn_start'));
    const messages = (await store.listMessages(sessionId)).map((record) => record.message);
    const toolResults = messages.filter((message) => message.role === 'tool').map((message) => message.content);
    expect({ turnStarts, toolResults }).toEqual({
      turnStarts: ['agent_turn_start:3', 'agent_turn_start:4'],
      toolResults: ['1', '2', '3', '4'],
    });
  });
});
