import { describe, expect, it } from 'vitest';
import { observeText, reasonText, type ScriptedLlmServer, isPhaseCue } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const stepwise = useScriptedStepwise();
const open = stepwise.open;

/** A model that adds one with the calculator each step and never finishes on its own. */
function counting(llm: ScriptedLlmServer) {
  llm.respond((request) => {
    const results = request.body.messages.filter((message) => message.role === 'tool').length;
    if (request.phase === 'reason') return { text: reasonText(`Add one (have ${results}).`) };
    if (request.phase === 'act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` } }] };
    if (request.phase === 'final') return { text: `Got to ${results} so far.` };
    return results >= 3
      ? { text: observeText('Enough.', { final_answer: `Counted to ${results}.`, should_continue: false }) }
      : { text: observeText(`At ${results}.`, { should_continue: true }) };
  });
}

describe('continuing a run', () => {
  it('goes on from where a run stopped at its step limit, with the same request, tools and its earlier steps', async () => {
    ({ llm, server, client } = await stepwise.start());
    counting(llm);
    client.chat('Count to three', { agent_mode: true, agent_max_steps: 2, tools: ['calculator'] });
    const first = await client.untilComplete();
    expect(first.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'max_steps', steps: 2 });
    const firstRun = first[0]!.run_id;

    const before = llm.requests.length;
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume', extra_steps: 3 });
    const second = await client.untilComplete({ from });
    // Its budget is the steps done plus the extra ones; it goes on at step 3, the first two not shown again.
    expect(second[0]).toMatchObject({ update_type: 'agent_start', resumed_from: firstRun, max_steps: 5, tools: ['calculator'], strategy: 'roa' });
    expect(second.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'Counted to 3.' });
    expect(summarize(second).filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3']);
    expect(summarize(second)).not.toContain('agent_reason:1');

    // No completed call was made again: the continued run's first call is step 3's reason, holding
    // the question once, then the first run's two calculator steps.
    expect(llm.requests[before]!.phase).toBe('reason');
    const messages = llm.requests[before]!.body.messages;
    expect(messages.filter((message) => message.role === 'user' && !isPhaseCue(message.content))).toHaveLength(1);
    expect(messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual(['1', '2']);
    expect(llm.requests[before]!.runId).toBe(second[0]!.run_id);

    // The history holds one question, both runs' steps, and the final answer (not the first run's note).
    const history = (await (await fetch(`${server.url}/api/sessions/${client.session.session_id}`)).json()) as {
      messages: { role: string; content: string }[];
      runs: { id: string }[];
    };
    expect(history.messages.filter((message) => message.role === 'user')).toHaveLength(1);
    expect(history.runs).toHaveLength(2);
  });

  it('stop, then resume: the new run goes on at the step it stopped in, and no completed call is made again', async () => {
    ({ llm, server, client } = await stepwise.start());
    let hold = true;
    llm.respond((request) => {
      const results = request.body.messages.filter((message) => message.role === 'tool').length;
      if (request.phase === 'observe' && results === 2 && hold) return { hang: true };
      if (request.phase === 'reason') return { text: reasonText(`Add one (have ${results}).`) };
      if (request.phase === 'act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` } }] };
      return results >= 3
        ? { text: observeText('Enough.', { final_answer: `Counted to ${results}.`, should_continue: false }) }
        : { text: observeText(`At ${results}.`, { should_continue: true }) };
    });
    client.chat('Count to three', { agent_mode: true, agent_max_steps: 5 });
    const held = await llm.waitFor((request) => request.phase === 'observe' && request.body.messages.filter((message) => message.role === 'tool').length === 2);
    client.send({ type: 'agent_control', action: 'stop' });
    const first = await client.untilComplete();
    await llm.waitForAbort(held);
    expect(summarize(first).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);

    hold = false;
    const before = llm.requests.length;
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume', extra_steps: 2 });
    const second = await client.untilComplete({ from });
    expect(second.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'Counted to 3.' });
    // Step 2's reason, act and tool were done before the stop: only its observe is made again.
    expect(llm.requests.slice(before).map((request) => request.phase)).toEqual(['observe', 'reason', 'act', 'observe']);
    expect(second.filter((event) => event.type === 'tool_start')).toHaveLength(1);
  });

  it('refuses, with not_resumable, to continue an answered run, a plain answer, or nothing; and run_active while one runs', async () => {
    ({ llm, server, client } = await stepwise.start());
    client.send({ type: 'agent_control', action: 'resume' });
    expect(await client.waitFor('error')).toMatchObject({ code: 'not_resumable', message: 'This chat has no run to continue' });

    llm.enqueue({ text: 'Hello!' });
    let from = client.events.length;
    client.chat('Hi');
    await client.untilComplete({ from });
    from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'not_resumable' });

    llm.enqueue({ text: reasonText('Known.', { finish: true }) }, { text: observeText('Done.', { final_answer: 'Paris.', should_continue: false }) });
    from = client.events.length;
    client.chat('Capital of France?', { agent_mode: true });
    await client.untilComplete({ from });
    from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'not_resumable', message: expect.stringContaining('answered') });

    llm.enqueue({ hang: true });
    from = client.events.length;
    client.chat('Think', { agent_mode: true });
    await client.waitFor('agent_turn_start', { from });
    client.send({ type: 'agent_control', action: 'resume' });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'run_active' });
  });

  it('continues a run that reached its step limit on the demo model, which picks up the calculation where it was', async () => {
    server = open(await startStepwise());
    client = open(await TestClient.connect(server.wsUrl));
    client.chat('First compute 12*7, then add 15, divide by 3, subtract 4', { agent_mode: true, agent_max_steps: 2 });
    const first = await client.untilComplete();
    expect(first.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'max_steps' });
    expect(String(first.find((event) => event.type === 'assistant_message')!.content)).toMatch(/Still missing/);

    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    const second = await client.untilComplete({ from });
    const calculations = second.filter((event) => event.type === 'tool_start').map((event) => (event.arguments as { expression: string }).expression);
    expect(calculations).toEqual(['99 / 3', '33 - 4']);
    expect(String(second.find((event) => event.type === 'assistant_message')!.content)).toContain('**29**');
  });
});
