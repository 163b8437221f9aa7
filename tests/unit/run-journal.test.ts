import { roa, textAnswer } from '@stepwise/backend';
import type { LoggedEventBody } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import type { ArraySink } from '../helpers/array-sink.ts';
import { inProcessKernel } from '../helpers/kernel.ts';
import { ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

const KERNEL_EVENTS = new Set(['agent_start', 'agent_completion', 'agent_stopped', 'agent_error', 'assistant_message', 'response_complete']);

/** What a run's strategy logged (its start and ending left out), as the store would give it back. */
function strategyEvents(sink: ArraySink): LoggedEventBody[] {
  return sink.events.filter((event) => !KERNEL_EVENTS.has(event.type === 'agent_update' ? event.update_type : event.type));
}

/** A model that adds one with the calculator every step and never finishes; `hangAt` holds that call open. */
function counting(hangAt?: (purpose: string, index: number) => boolean) {
  return new ScriptedLlmClient((request, index) => {
    if (hangAt?.(request.purpose, index)) return { hang: true };
    const results = request.messages.filter((message) => message.role === 'tool').length;
    if (request.purpose === 'roa.reason') return { text: reasonText(`Add one to ${results}.`) };
    if (request.purpose === 'roa.act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` }, id: `add_${results}` }] };
    if (request.purpose === 'roa.final') return { text: `Reached ${results}.` };
    return { text: observeText(`At ${results}.`, { should_continue: true }) };
  });
}

describe('the run journal', () => {
  it('stop, then continue: the new run goes on at the next step and no completed call is made again', async () => {
    const first = counting((purpose, index) => purpose === 'roa.observe' && index >= 5);
    const kernel = inProcessKernel(first, [roa]);
    const stopped = kernel.start('Count', { maxSteps: 5 });
    await first.untilCalls(6);
    stopped.control.stop('user');
    const ended = await stopped.outcome;
    expect(ended).toMatchObject({ status: 'stopped', steps: 2 });

    const second = counting();
    const again = inProcessKernel(second, [roa]);
    for (const [runId, entries] of kernel.journal.runs) again.journal.runs.set(runId, entries);
    const past = {
      runId: stopped.input.runId,
      entries: (await kernel.journal.read(stopped.input.runId)).filter((entry) => entry.kind !== 'input'),
      events: strategyEvents(stopped.sink),
      storedMessages: ended.transcript.length,
    };
    const resumed = again.start('Count', { maxSteps: 3, past, runId: 'run-continued' });
    const outcome = await resumed.outcome;
    expect(outcome).toMatchObject({ status: 'completed', steps: 3 });
    // Step 2's reason and act were made before the stop: only its observe, then step 3, are new.
    expect(second.purposes()).toEqual(['roa.observe', 'roa.reason', 'roa.act', 'roa.observe', 'roa.final']);
    expect(resumed.sink.events[0]).toMatchObject({ update_type: 'agent_start', resumed_from: stopped.input.runId });
    expect(resumed.sink.summary().filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3']);
    expect(resumed.sink.summary()).not.toContain('agent_reason:1');
    // The calculator went on from where it was: 2 after the first run, 3 now.
    expect(resumed.sink.events.filter((event) => event.type === 'tool_start').map((event) => (event as { arguments: unknown }).arguments)).toEqual([
      { expression: '2+1' },
    ]);
    // The session's history gets only what the continued run added.
    expect(outcome.transcript.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual(['3']);
  });

  it('cap at 2 steps, continue with 2 more: 4 steps in all', async () => {
    const first = counting();
    const kernel = inProcessKernel(first, [roa]);
    const capped = kernel.start('Count', { maxSteps: 2 });
    const ended = await capped.outcome;
    expect(ended).toMatchObject({ status: 'completed', steps: 2 });
    expect(first.purposes().at(-1)).toBe('roa.final');

    const second = counting();
    const again = inProcessKernel(second, [roa]);
    for (const [runId, entries] of kernel.journal.runs) again.journal.runs.set(runId, entries);
    const past = {
      runId: capped.input.runId,
      entries: (await kernel.journal.read(capped.input.runId)).filter((entry) => entry.kind !== 'input'),
      events: strategyEvents(capped.sink),
      storedMessages: ended.transcript.length - 1,
    };
    const continued = again.start('Count', { maxSteps: 4, past, runId: 'run-continued' });
    expect(await continued.outcome).toMatchObject({ status: 'completed', steps: 4, answer: 'Reached 4.' });
    expect(second.purposes()).toEqual(['roa.reason', 'roa.act', 'roa.observe', 'roa.reason', 'roa.act', 'roa.observe', 'roa.final']);
    expect(continued.sink.summary().filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3', 'agent_turn_start:4']);
  });

  it('after a restart the same run goes on from its journal: every completed call made once, nothing logged twice', async () => {
    const first = counting((purpose, index) => purpose === 'roa.act' && index === 4);
    const kernel = inProcessKernel(first, [roa]);
    const crashed = kernel.start('Count', { maxSteps: 3, runId: 'run-9' });
    await first.untilCalls(5);
    // The process dies here: nothing more is logged or journaled.
    const events = strategyEvents(crashed.sink);
    const entries = (await kernel.journal.read('run-9')).filter((entry) => entry.kind !== 'input');
    crashed.control.stop('shutdown');
    await crashed.outcome;

    const second = counting();
    const restarted = inProcessKernel(second, [roa]);
    restarted.journal.runs.set('run-9', structuredClone(kernel.journal.runs.get('run-9')!));
    const resumed = restarted.start('Count', { maxSteps: 3, runId: 'run-9', past: { runId: 'run-9', entries, events, storedMessages: 0 } });
    expect(await resumed.outcome).toMatchObject({ status: 'completed', steps: 3 });
    expect(second.purposes()).toEqual(['roa.act', 'roa.observe', 'roa.reason', 'roa.act', 'roa.observe', 'roa.final']);
    // No second agent_start, and step 2's turn start and reason were not logged again.
    expect(resumed.sink.summary()[0]).toBe('tool_start:calculator');
    expect(
      [...events.map((event) => JSON.stringify(event)), ...resumed.sink.events.map((event) => JSON.stringify(event))].filter(
        (line, at, all) => all.indexOf(line) !== at,
      ),
    ).toEqual([]);
    // The journal of the run now holds each call once.
    const keys = (await restarted.journal.read('run-9')).map((entry) => `${entry.kind}:${entry.key}`);
    expect(keys.filter((key) => key === 'model:roa.reason')).toHaveLength(3);
    expect(keys.filter((key) => key === 'model:roa.final')).toHaveLength(1);
  });

  it('a question waiting when the server stopped waits on with the same id after the restart, and its answer finishes the run', async () => {
    const asking = () =>
      new ScriptedLlmClient((request) => {
        if (request.purpose === 'roa.reason') return { text: reasonText('Ask which city.') };
        if (request.purpose === 'roa.act') return { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' }, id: 'ask_1' }] };
        const answered = request.messages.some((message) => message.role === 'tool');
        return { text: observeText('Got it.', { final_answer: answered ? 'Weather for Oslo.' : '', should_continue: !answered }) };
      });
    const first = asking();
    const kernel = inProcessKernel(first, [roa]);
    const waiting = kernel.start('Weather?', { runId: 'run-q' });
    const question = await waiting.sink.until((event) => event.type === 'agent_update' && event.update_type === 'agent_request_input');
    const events = strategyEvents(waiting.sink);
    const entries = (await kernel.journal.read('run-q')).filter((entry) => entry.kind !== 'input');
    waiting.control.stop('shutdown');
    await waiting.outcome;

    const second = asking();
    const restarted = inProcessKernel(second, [roa]);
    restarted.journal.runs.set('run-q', structuredClone(kernel.journal.runs.get('run-q')!));
    const resumed = restarted.start('Weather?', { runId: 'run-q', past: { runId: 'run-q', entries, events, storedMessages: 0 } });
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(resumed.control.provideInput(textAnswer('Oslo'), (question as { question_id: string }).question_id)).toBe('answered');
    expect(await resumed.outcome).toMatchObject({ status: 'completed', answer: 'Weather for Oslo.' });
    expect(second.purposes()).toEqual(['roa.observe']);
    // The question was not shown again: the first thing logged is its answer.
    expect(resumed.sink.summary()[0]).toBe('tool_complete:request_input');
  });
});
