// The run journal at its edges: parallel tools, continuations of continuations, stops during a replay, questions left open.
import {
  type JournalEntry,
  AgentControl,
  configFromEnv,
  HandlebarsPromptProvider,
  type LlmClient,
  type Logger,
  roa,
  type RunInput,
  RunKernel,
  type RunOutcome,
  type RunPast,
  type Tool,
  ToolRegistry,
  textAnswer,
} from '@stepwise/backend';
import type { LoggedEventBody } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { ArraySink } from '../helpers/array-sink.ts';
import { MemoryJournal } from '../helpers/kernel.ts';
import { ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const KERNEL_EVENTS = new Set(['agent_start', 'agent_completion', 'agent_stopped', 'agent_error', 'assistant_message', 'response_complete']);
const strategyEvents = (sink: ArraySink): LoggedEventBody[] =>
  sink.events.filter((event) => !KERNEL_EVENTS.has(event.type === 'agent_update' ? event.update_type : event.type));

/** What a continuation is given of the run `runId` before it: its journal (answers left out), its events, its stored messages. */
async function pastOf(journal: { read(runId: string): Promise<JournalEntry[]> }, runId: string, sink: ArraySink, storedMessages: number) {
  const entries = (await journal.read(runId)).filter((entry) => entry.kind !== 'input');
  return { runId, entries, events: strategyEvents(sink), storedMessages };
}

/** A tool that counts its executions; `hang` makes it wait until aborted, `delayMs` makes it slow. */
function countingTool(name: string, behaviour: { hang?: boolean; delayMs?: number } = {}) {
  const tool = {
    runs: 0,
    name,
    description: name,
    source: 'builtin',
    parameters: z.object({}).passthrough(),
    async execute(_args: unknown, context: { signal: AbortSignal }) {
      tool.runs++;
      if (behaviour.hang) {
        await new Promise((_, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true }));
      }
      if (behaviour.delayMs) await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
      return `${name} done`;
    },
  };
  return tool;
}

function kernelWith(llm: LlmClient, tools: Tool[], journal = new MemoryJournal(), env: Record<string, string> = {}) {
  const config = configFromEnv({ AGENT_INPUT_TIMEOUT_MS: '60000', ...env });
  const kernel = new RunKernel([roa], llm, new ToolRegistry(config, tools), new HandlebarsPromptProvider(config), config, silent, journal);
  return {
    journal,
    start(runId: string, options: { maxSteps?: number; toolNames: string[]; past?: RunPast & { storedMessages: number } }) {
      const input: RunInput = {
        runId,
        sessionId: 's',
        strategy: 'roa',
        question: 'Q',
        history: [],
        maxSteps: options.maxSteps ?? 3,
        toolNames: options.toolNames,
        options: {},
      };
      const sink = new ArraySink();
      const control = new AgentControl();
      const outcome: Promise<RunOutcome> = kernel.execute(input, { control, sink, filesManifest: async () => '' }, options.past ? { past: options.past } : {});
      return { input, sink, control, outcome };
    },
  };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

/**
 * A model that adds one per step with the calculator and never answers, wrapped so that an
 * observe call hangs (until the run's signal aborts it) whenever `hang` says so.
 */
function counting(hang: (purpose: string, observes: number) => boolean) {
  const llm = new ScriptedLlmClient((request) => {
    const results = request.messages.filter((message) => message.role === 'tool').length;
    if (request.purpose === 'roa.reason') return { text: reasonText(`Add one to ${results}.`) };
    if (request.purpose === 'roa.act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` }, id: `add_${results}` }] };
    if (request.purpose === 'roa.final') return { text: `Reached ${results}.` };
    return { text: observeText(`At ${results}.`, { should_continue: true }) };
  });
  const wrapped: LlmClient = {
    modelName: 'x',
    isDemo: false,
    complete: async (request) => {
      const observes = llm.requests.filter((r) => r.purpose === 'roa.observe').length;
      if (request.purpose === 'roa.observe' && hang(request.purpose, observes)) {
        await new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }));
      }
      return llm.complete(request);
    },
  };
  return { llm, wrapped };
}

/** A model that asks which city (call id ask_1) and answers once the question has its answer. */
const asking = () =>
  new ScriptedLlmClient((request) => {
    if (request.purpose === 'roa.reason') return { text: reasonText('Ask which city.') };
    if (request.purpose === 'roa.act') return { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' }, id: 'ask_1' }] };
    const answered = request.messages.some((message) => message.role === 'tool');
    return { text: observeText('Got it.', { final_answer: answered ? 'Oslo it is.' : '', should_continue: !answered }) };
  });

describe('journal replay', () => {
  it('parallel tools: after a crash with one call in flight, the call that had completed is not executed again', async () => {
    // The model asks for two tools at once; `slow` is in flight when the server dies, `fast` had finished.
    const script = () =>
      new ScriptedLlmClient((request) => {
        if (request.purpose === 'roa.reason') return { text: reasonText('Use both.') };
        if (request.purpose === 'roa.act') {
          const done = request.messages.some((message) => message.role === 'tool');
          return done
            ? { text: 'nothing more' }
            : {
                toolCalls: [
                  { name: 'slow', arguments: {}, id: 's1' },
                  { name: 'fast', arguments: {}, id: 'f1' },
                ],
              };
        }
        return { text: observeText('Done.', { final_answer: 'ok', should_continue: false }) };
      });
    const slow1 = countingTool('slow', { hang: true });
    const fast1 = countingTool('fast');
    const first = kernelWith(script(), [slow1 as unknown as Tool, fast1 as unknown as Tool]);
    const crashed = first.start('run-p', { toolNames: ['slow', 'fast'] });
    await crashed.sink.until((event) => event.type === 'tool_complete');
    await tick();
    const entries = (await first.journal.read('run-p')).filter((entry) => entry.kind !== 'input');
    const events = strategyEvents(crashed.sink);
    expect(entries.map((entry) => `${entry.kind}:${entry.key}`)).toContain('tool:fast:f1');
    crashed.control.stop('shutdown');
    await crashed.outcome;

    // Restart: the same run goes on from its journal.
    const slow2 = countingTool('slow');
    const fast2 = countingTool('fast');
    const journal = new MemoryJournal();
    journal.runs.set('run-p', structuredClone(first.journal.runs.get('run-p')!));
    const second = kernelWith(script(), [slow2 as unknown as Tool, fast2 as unknown as Tool], journal);
    const resumed = second.start('run-p', { toolNames: ['slow', 'fast'], past: { runId: 'run-p', entries, events, storedMessages: 0 } });
    expect(await resumed.outcome).toMatchObject({ status: 'completed' });
    expect(slow2.runs).toBe(1); // the call that was in flight runs again: expected
    expect(fast2.runs).toBe(0); // holds this time: the fast result was replayed
    // ...but the journal no longer holds it: a second crash would run `fast` again.
    const keys = (await journal.read('run-p')).map((entry) => `${entry.kind}:${entry.key}`);
    expect(keys).toContain('tool:fast:f1');
  });

  it('parallel tools finishing out of model order: continuing the run logs none of the past again', async () => {
    // Step 1: `slowfirst` (model order 1) finishes after `fast`; step 2 is stopped during observe.
    let stopAtObserve2 = true;
    const script = () =>
      new ScriptedLlmClient((request) => {
        const results = request.messages.filter((message) => message.role === 'tool').length;
        if (request.purpose === 'roa.reason') return { text: reasonText(`Plan at ${results}.`) };
        if (request.purpose === 'roa.act') {
          return results === 0
            ? {
                toolCalls: [
                  { name: 'slowfirst', arguments: {}, id: 'a1' },
                  { name: 'fast', arguments: {}, id: 'b1' },
                ],
              }
            : { text: 'no tools' };
        }
        if (request.purpose === 'roa.final') return { text: 'final' };
        return { text: observeText(`At ${results}.`, { should_continue: true }) };
      });
    const llm1 = script();
    const hangingLlm: LlmClient = {
      modelName: 'x',
      isDemo: false,
      complete: async (request) => {
        const observeCalls = llm1.requests.filter((r) => r.purpose === 'roa.observe').length;
        if (stopAtObserve2 && request.purpose === 'roa.observe' && observeCalls >= 1) {
          await new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true }));
        }
        return llm1.complete(request);
      },
    };
    const tools1 = [countingTool('slowfirst', { delayMs: 50 }), countingTool('fast')] as unknown as Tool[];
    const k1 = kernelWith(hangingLlm, tools1);
    const run1 = k1.start('run-1', { maxSteps: 3, toolNames: ['slowfirst', 'fast'] });
    await run1.sink.until((event) => event.type === 'agent_update' && event.update_type === 'agent_reason' && event.step === 2);
    await tick();
    run1.control.stop('user');
    const ended = await run1.outcome;
    expect(ended.status).toBe('stopped');
    // The past logged fast's tool_complete before slowfirst's.
    expect(run1.sink.summary()).toEqual(expect.arrayContaining(['tool_complete:fast', 'tool_complete:slowfirst']));
    expect(run1.sink.summary().indexOf('tool_complete:fast')).toBeLessThan(run1.sink.summary().indexOf('tool_complete:slowfirst'));

    stopAtObserve2 = false;
    const tools2 = [countingTool('slowfirst', { delayMs: 50 }), countingTool('fast')] as unknown as Tool[];
    const k2 = kernelWith(script(), tools2, k1.journal);
    const past = await pastOf(k1.journal, 'run-1', run1.sink, ended.transcript.length);
    const run2 = k2.start('run-2', { maxSteps: 3, toolNames: ['slowfirst', 'fast'], past });
    await run2.outcome;
    console.log('run2 events:', run2.sink.summary().join(' '));
    // A continued run shows only its new steps: step 2's observe and step 3.
    expect(run2.sink.summary().filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3']);
    expect(run2.sink.summary()).not.toContain('tool_complete:fast');
  });

  it('continuing a continued run logs only the new steps (not the first run’s again)', async () => {
    const { calculatorTool } = await import('@stepwise/backend');
    const journal = new MemoryJournal();
    // Run 1: stopped during step 2's observe.
    const m1 = counting((_p, observes) => observes >= 1);
    const k1 = kernelWith(m1.wrapped, [calculatorTool as Tool], journal);
    const run1 = k1.start('run-1', { maxSteps: 5, toolNames: ['calculator'] });
    await run1.sink.until((event) => event.type === 'tool_complete' && event.step === 2);
    await tick();
    run1.control.stop('user');
    const end1 = await run1.outcome;
    // Run 2 continues run 1 and is stopped during step 3's observe.
    const m2 = counting((_p, observes) => observes >= 1);
    const k2 = kernelWith(m2.wrapped, [calculatorTool as Tool], journal);
    const past1 = await pastOf(journal, 'run-1', run1.sink, end1.transcript.length);
    const run2 = k2.start('run-2', { maxSteps: 5, toolNames: ['calculator'], past: past1 });
    await run2.sink.until((event) => event.type === 'tool_complete' && event.step === 3);
    await tick();
    run2.control.stop('user');
    const end2 = await run2.outcome;
    expect(run2.sink.summary().filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3']);
    // Run 3 continues run 2: its journal holds run 1's entries too, and its past events are both runs' (as the store gives them).
    const m3 = counting(() => false);
    const k3 = kernelWith(m3.wrapped, [calculatorTool as Tool], journal);
    const past2 = {
      runId: 'run-2',
      entries: (await journal.read('run-2')).filter((entry) => entry.kind !== 'input'),
      events: [...strategyEvents(run1.sink), ...strategyEvents(run2.sink)],
      storedMessages: end1.transcript.length + end2.transcript.length,
    };
    const run3 = k3.start('run-3', { maxSteps: 5, toolNames: ['calculator'], past: past2 });
    await run3.outcome;
    // No completed call is made again (holds)...
    expect(m3.llm.purposes()[0]).toBe('roa.observe');
    // ...and none of run 1's or run 2's steps is logged again under run 3.
    expect(run3.sink.summary().filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:4', 'agent_turn_start:5']);
  });

  it('a continuation stopped during its replay, continued again, makes none of the first run’s calls again', async () => {
    const { calculatorTool } = await import('@stepwise/backend');
    const make = (hangObserveAfter: number) => counting((_purpose, observes) => observes >= hangObserveAfter);
    const journal = new MemoryJournal();
    // Run 1: three full steps, stopped in step 4's observe.
    const m1 = make(3);
    const run1 = kernelWith(m1.wrapped, [calculatorTool as Tool], journal).start('run-1', { maxSteps: 8, toolNames: ['calculator'] });
    await run1.sink.until((event) => event.type === 'tool_complete' && event.step === 4);
    await tick();
    run1.control.stop('user');
    const end1 = await run1.outcome;
    // Run 2 continues it; the user presses stop while it is still going through run 1's steps.
    const stopping = new MemoryJournal();
    for (const [id, entries] of journal.runs) stopping.runs.set(id, entries);
    let appended = 0;
    let stopRun2: () => void = () => undefined;
    const append = stopping.append.bind(stopping);
    stopping.append = async (runId, entry) => {
      await append(runId, entry);
      if (runId === 'run-2' && ++appended === 4) stopRun2();
    };
    const m2 = make(99);
    const past1 = await pastOf(journal, 'run-1', run1.sink, end1.transcript.length);
    const run2 = kernelWith(m2.wrapped, [calculatorTool as Tool], stopping).start('run-2', { maxSteps: 10, toolNames: ['calculator'], past: past1 });
    stopRun2 = () => run2.control.stop('user');
    const end2 = await run2.outcome;
    expect(end2.status).toBe('stopped');
    expect(m2.llm.requests).toHaveLength(0);
    // Run 3 continues run 2 (now the chat's last run).
    const m3 = make(99);
    const past2 = await pastOf(stopping, 'run-2', run2.sink, end1.transcript.length);
    const run3 = kernelWith(m3.wrapped, [calculatorTool as Tool], stopping).start('run-3', { maxSteps: 6, toolNames: ['calculator'], past: past2 });
    await run3.outcome;
    console.log('run 2 ended at step', end2.steps, '; run 3 calls:', m3.llm.purposes().join(' '));
    // Run 1 finished steps 1-3 and step 4's reason and act: only step 4's observe, then steps 5-6, are new.
    expect(m3.llm.purposes().filter((purpose) => purpose === 'roa.act')).toHaveLength(2);
  });

  it('a question pending when the user stopped: the continued run shows it again (under its own run)', async () => {
    const { calculatorTool } = await import('@stepwise/backend');
    const journal = new MemoryJournal();
    const k1 = kernelWith(asking(), [calculatorTool as Tool], journal);
    const run1 = k1.start('run-1', { toolNames: ['calculator'] });
    await run1.sink.until((event) => event.type === 'agent_update' && event.update_type === 'agent_request_input');
    run1.control.stop('user');
    const end1 = await run1.outcome;
    expect(end1.status).toBe('stopped');

    const k2 = kernelWith(asking(), [calculatorTool as Tool], journal);
    const past = await pastOf(journal, 'run-1', run1.sink, end1.transcript.length);
    const run2 = k2.start('run-2', { toolNames: ['calculator'], past });
    await tick();
    // The run waits on a question...
    expect(run2.control.pendingQuestions).toHaveLength(1);
    run2.control.stop('user');
    await run2.outcome;
    // ...that the continued run never logged: a client (the web app ignores questions of ended runs) cannot see it.
    expect(run2.sink.summary()).toContain('agent_request_input:1');
  });

  it('a re-asked question of a continued run keeps its id and deadline after a restart', async () => {
    const { calculatorTool } = await import('@stepwise/backend');
    const journal = new MemoryJournal();
    // Run 1: nobody answers within 100 ms.
    const k1 = kernelWith(asking(), [calculatorTool as Tool], journal, { AGENT_INPUT_TIMEOUT_MS: '100', INPUT_TIMEOUT_ACTION: 'stop' });
    const run1 = k1.start('run-1', { toolNames: ['calculator'] });
    const end1 = await run1.outcome;
    expect(end1).toMatchObject({ status: 'stopped', reason: 'input_timeout' });
    // Run 2 continues it and asks again under a new id; the server dies while it waits.
    const k2 = kernelWith(asking(), [calculatorTool as Tool], journal);
    const past = await pastOf(journal, 'run-1', run1.sink, end1.transcript.length);
    const run2 = k2.start('run-2', { toolNames: ['calculator'], past });
    const asked = (await run2.sink.until((event) => event.type === 'agent_update' && event.update_type === 'agent_request_input')) as { question_id: string };
    const entries2 = (await journal.read('run-2')).filter((entry) => entry.kind !== 'input');
    const events2 = strategyEvents(run2.sink);
    const saved = structuredClone(journal.runs.get('run-2')!);
    run2.control.stop('shutdown');
    await run2.outcome;
    // Restart: run 2 goes on from its own journal; the user answers the question they were shown.
    const journal3 = new MemoryJournal();
    journal3.runs.set('run-2', saved);
    const k3 = kernelWith(asking(), [calculatorTool as Tool], journal3);
    const resumed = k3.start('run-2', { toolNames: ['calculator'], past: { runId: 'run-2', entries: entries2, events: events2, storedMessages: 0 } });
    await tick();
    const outcome = resumed.control.provideInput(textAnswer('Oslo'), asked.question_id);
    const end = await Promise.race([resumed.outcome, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 500))]);
    expect({ outcome, end }).toMatchObject({ outcome: 'answered', end: { status: 'completed' } });
  });
});
