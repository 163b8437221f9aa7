import {
  applyTodoOperation,
  autonomous,
  type CompletionRequest,
  decide,
  ensureAlternation,
  guidanceVariant,
  needsStrictAlternation,
  parseTodos,
  PLANNING_LOOP_LIMIT,
  readMarkers,
  TODOS_FILE,
  TodoError,
} from '@stepwise/backend';
import type { LlmMessage } from '@stepwise/backend';
import type { LoggedEventBody, Todo } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { inProcessKernel } from '../helpers/kernel.ts';
import { type ScriptedAnswer, ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

const todoCall = (args: Record<string, unknown>) => ({ name: 'todo_operations', arguments: args });
const write = (...titles: string[]) => todoCall({ operation: 'write', todos: titles.map((title) => ({ title })) });
const update = (id: string, status: string) => todoCall({ operation: 'update', id, status });
const listFile = (todos: Todo[]) => JSON.stringify({ todos });

const updates = (events: LoggedEventBody[], type: string) =>
  events.filter((event) => event.type === 'agent_update' && event.update_type === type) as Array<Record<string, unknown>>;

function start(answers: ScriptedAnswer[], options: { maxSteps?: number; files?: Map<string, string>; workflowMode?: boolean; fallback?: ScriptedAnswer } = {}) {
  const llm = new ScriptedLlmClient(() => options.fallback ?? { text: 'Nothing more.' }).enqueue(...answers);
  const run = inProcessKernel(llm, [autonomous]).start('Do the work', {
    strategy: 'autonomous',
    maxSteps: options.maxSteps ?? 10,
    ...(options.files ? { files: options.files } : {}),
    ...(options.workflowMode ? { strategyOptions: { workflow_mode: true } } : {}),
  });
  return { llm, ...run };
}

/** The guidance reminder sent as the last message of a request. */
const reminderOf = (request: CompletionRequest) => {
  const last = request.messages.at(-1)!;
  return last.role === 'user' ? last.content : '';
};

describe('the continuation guidance matrix', () => {
  it('picks one of four variants from incomplete todos × tools used in the last iteration', () => {
    expect(guidanceVariant(true, true)).toBe('todos_tools');
    expect(guidanceVariant(true, false)).toBe('todos_no_tools');
    expect(guidanceVariant(false, true)).toBe('tools');
    expect(guidanceVariant(false, false)).toBe('no_tools');
  });

  it('sends each cell’s text as an ephemeral reminder and logs it as agent_guidance, never storing it in the transcript', async () => {
    const { llm, sink, outcome } = start([
      { text: 'Planning.', toolCalls: [write('a', 'b')] }, // iteration 1: no todos, no tools before → no_tools
      { text: 'Working on a.', toolCalls: [update('1', 'in_progress')] }, // 2: todos open, tools used → todos_tools
      { text: 'Just talking.' }, // 3: todos open, tools used → todos_tools; then stops with todos open
      { text: 'Still talking.' }, // 4: todos open, no tools → todos_no_tools (reminder 1)
      { toolCalls: [update('1', 'completed'), update('2', 'completed')] }, // 5: todos_no_tools (reminder 2)
      { text: 'All done. [WORKFLOW_COMPLETE]' }, // 6: no todos open, tools used → tools
    ]);
    const result = await outcome;
    expect(result).toMatchObject({ status: 'completed', answer: 'All done.', steps: 6 });
    const guidance = updates(sink.events, 'agent_guidance');
    expect(guidance.map((event) => [event.step, event.variant, event.level])).toEqual([
      [1, 'no_tools', 0],
      [2, 'todos_tools', 0],
      [3, 'todos_tools', 0],
      [4, 'todos_no_tools', 1],
      [5, 'todos_no_tools', 2],
      [6, 'tools', 0],
    ]);
    // What was logged is what the model was sent, as the request's last message, and only there.
    for (const [index, event] of guidance.entries()) expect(reminderOf(llm.requests[index]!)).toContain(String(event.content));
    expect(guidance[0]!.content).toContain('WORKFLOW GUIDANCE');
    expect(guidance[1]!.content).toContain('MANDATORY TODO WORKFLOW');
    expect(guidance[3]!.content).toContain('CRITICAL WORKFLOW GUIDANCE (TODO MODE)');
    expect(guidance[5]!.content).toContain('Your previous iteration included tool execution');
    expect(JSON.stringify(result.transcript)).not.toContain('system-reminder');
    expect(llm.purposes().every((purpose) => purpose === 'autonomous.iteration')).toBe(true);
  });
});

describe('the continuation rule', () => {
  it('follows the seed’s priority: marker, tool calls, open todos, workflow mode, natural stop', () => {
    const reply = (text: string) => readMarkers(text);
    expect(decide(reply('x [WORKFLOW_COMPLETE]'), true, 3, true)).toEqual({ kind: 'stop', reason: 'workflow_complete' });
    expect(decide(reply('x [CONTINUE]'), false, 0, false)).toEqual({ kind: 'continue', reminder: false });
    expect(decide(reply('x'), true, 0, false)).toEqual({ kind: 'continue', reminder: false });
    expect(decide(reply('x'), false, 2, false)).toEqual({ kind: 'continue', reminder: true });
    expect(decide(reply('x'), false, 0, true)).toEqual({ kind: 'continue', reminder: false });
    expect(decide(reply('x'), false, 0, false)).toEqual({ kind: 'stop', reason: 'natural_stop' });
  });

  it('gives graduated reminders at levels 1, 2 and 3 to a model that stops with open todos, then ends at the iteration limit', async () => {
    const { sink, outcome } = start([{ text: 'Plan.', toolCalls: [write('a', 'b')] }], { maxSteps: 6, fallback: { text: 'I think we are done.' } });
    const result = await outcome;
    expect(result).toMatchObject({ status: 'completed', steps: 6 });
    expect(sink.summary().at(-2)).toBe('agent_completion:max_steps');
    const guidance = updates(sink.events, 'agent_guidance');
    expect(guidance.map((event) => event.level)).toEqual([0, 0, 1, 2, 3, 3]);
    expect(guidance[2]!.content).toContain('REMINDER: You have incomplete todos (2 left)');
    expect(guidance[3]!.content).toContain("WARNING: You're in a loop");
    expect(guidance[4]!.content).toContain('FINAL WARNING');
    expect((result as { answer: string }).answer).toContain('2 todos still open');
  });

  it('goes on in workflow mode after a plain reply, and stops naturally without it', async () => {
    const free = start([{ text: 'Here is your answer.' }]);
    expect(await free.outcome).toMatchObject({ status: 'completed', answer: 'Here is your answer.', steps: 1 });
    expect(free.sink.summary().at(-2)).toBe('agent_completion:natural_stop');

    const workflow = start([{ text: 'First part.' }, { text: 'Second part. [WORKFLOW_COMPLETE]' }], { workflowMode: true });
    expect(await workflow.outcome).toMatchObject({ status: 'completed', answer: 'Second part.', steps: 2 });
    expect(workflow.sink.summary().at(-2)).toBe('agent_completion:workflow_complete');
  });
});

describe('markers', () => {
  it('are found anywhere in the text and removed before anything is shown or stored', async () => {
    expect(readMarkers('Done [WORKFLOW_COMPLETE] here.\n\n\n[CONTINUE]')).toEqual({ content: 'Done  here.', complete: true, continue: true });
    const { sink, outcome } = start([{ text: '[CONTINUE] Working on it.' }, { text: 'Finished.\n\n[WORKFLOW_COMPLETE]' }]);
    const result = await outcome;
    expect(result).toMatchObject({ status: 'completed', answer: 'Finished.', steps: 2 });
    const logged = JSON.stringify(sink.events) + JSON.stringify(result.transcript);
    expect(logged).not.toContain('[CONTINUE]');
    expect(logged).not.toContain('[WORKFLOW_COMPLETE]');
    expect(updates(sink.events, 'agent_message').map((event) => event.content)).toEqual(['Working on it.', 'Finished.']);
  });
});

describe('the todo list', () => {
  it('is read fresh at the check: a model that ends while a todo is open in the list gets a reminder', async () => {
    // The model believes it is done, but the list it wrote still has b open.
    const { sink, outcome } = start(
      [
        { toolCalls: [write('a', 'b')] },
        { toolCalls: [update('1', 'completed')] },
        { text: 'Everything is done.' },
        { toolCalls: [update('2', 'completed')] },
        { text: 'Now it really is. [WORKFLOW_COMPLETE]' },
      ],
      { maxSteps: 8 },
    );
    expect(await outcome).toMatchObject({ status: 'completed', answer: 'Now it really is.', steps: 5 });
    expect(updates(sink.events, 'agent_guidance').map((event) => event.level)).toEqual([0, 0, 0, 1, 0]);
  });

  it('is the session’s: a run finds the list a person left, and sends agent_todos with the whole list after every change', async () => {
    const files = new Map([[TODOS_FILE, listFile([{ id: '1', title: 'Left by a person', status: 'pending' }])]]);
    const { sink, outcome, llm } = start(
      [{ toolCalls: [update('1', 'in_progress')] }, { toolCalls: [update('1', 'completed')] }, { text: 'Done. [WORKFLOW_COMPLETE]' }],
      { files },
    );
    await outcome;
    expect(llm.requests[0]!.variables?.todos).toEqual([{ id: '1', title: 'Left by a person', status: 'pending' }]);
    expect(updates(sink.events, 'agent_todos').map((event) => (event.todos as Todo[]).map((todo) => todo.status))).toEqual([['in_progress'], ['completed']]);
    expect(parseTodos(files.get(TODOS_FILE))).toEqual([{ id: '1', title: 'Left by a person', status: 'completed' }]);
  });

  it('refuses a second todo in progress and an unknown id, telling the model why, and changes nothing', () => {
    const list: Todo[] = [
      { id: '1', title: 'a', status: 'in_progress' },
      { id: '2', title: 'b', status: 'pending' },
    ];
    expect(() => applyTodoOperation(list, { operation: 'update', id: '2', status: 'in_progress' })).toThrow(TodoError);
    expect(() => applyTodoOperation(list, { operation: 'update', id: '2', status: 'in_progress' })).toThrow(/At most one todo may be in_progress/);
    expect(() => applyTodoOperation(list, { operation: 'update', id: '9', status: 'completed' })).toThrow(/No todo "9"; the ids are 1, 2/);
    expect(applyTodoOperation(list, { operation: 'update', id: '1', status: 'completed' })).toMatchObject({ changed: true, completed: { id: '1' } });
    expect(list[0]!.status).toBe('in_progress');
  });

  it('answers a bad todo call with a tool error the model reads, and the run goes on', async () => {
    const { sink, outcome, llm } = start([
      { toolCalls: [todoCall({ operation: 'update', id: '7', status: 'completed' })] },
      { text: 'Sorry. [WORKFLOW_COMPLETE]' },
    ]);
    await outcome;
    expect(sink.summary()).toContain('tool_error:todo_operations');
    const results = llm.requests[1]!.messages.filter((message) => message.role === 'tool');
    expect(results.map((message) => message.content)).toEqual(['Error: No todo "7"; the ids are none (the list is empty)']);
  });
});

describe('planning-loop detection', () => {
  it('counts iterations that only touch the list without completing a todo, and a completion resets the count', async () => {
    const { sink, outcome } = start(
      [
        { toolCalls: [write('a', 'b')] },
        { toolCalls: [update('1', 'in_progress')] },
        { toolCalls: [todoCall({ operation: 'read' })] },
        { toolCalls: [update('1', 'completed')] },
        { text: 'Done. [WORKFLOW_COMPLETE]' },
      ],
      { maxSteps: 8 },
    );
    await outcome;
    const guidance = updates(sink.events, 'agent_guidance').map((event) => String(event.content));
    const flagged = guidance.map((content) => content.includes('PLANNING LOOP'));
    // After iterations 1 and 2 (list changes only) the 3rd gets the note; so does the 4th; the completion in the 4th resets it.
    expect(PLANNING_LOOP_LIMIT).toBe(2);
    expect(flagged).toEqual([false, false, true, true, false]);
    expect(guidance[3]).toContain('your last 3 iterations only changed the todo list');
  });

  it('does not count an iteration that used another tool as planning', async () => {
    const { sink, outcome } = start([
      { toolCalls: [write('a')] },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2+2' } }] },
      { toolCalls: [update('1', 'in_progress')] },
      { text: '[WORKFLOW_COMPLETE]' },
    ]);
    await outcome;
    expect(updates(sink.events, 'agent_guidance').some((event) => String(event.content).includes('PLANNING LOOP'))).toBe(false);
  });
});

describe('strict message alternation', () => {
  const call = { id: 'c1', name: 'calculator', arguments: '{}' };

  it('merges consecutive user and assistant messages, drops empty ones, and never leaves two assistant messages in a row', () => {
    const messages: LlmMessage[] = [
      { role: 'system', content: 'Rules.' },
      { role: 'system', content: 'More rules.' },
      { role: 'user', content: 'Hi' },
      { role: 'user', content: '' },
      { role: 'user', content: 'Compute this.' },
      { role: 'assistant', content: 'Let me think.' },
      { role: 'assistant', content: '' },
      { role: 'assistant', content: 'Calling.', toolCalls: [call] },
      { role: 'tool', toolCallId: 'c1', content: '4' },
      { role: 'assistant', content: 'It is 4.' },
      { role: 'assistant', content: 'Anything else?' },
      { role: 'system', content: 'Reminder.' },
      { role: 'user', content: 'No.' },
    ];
    expect(ensureAlternation(messages)).toEqual([
      { role: 'system', content: 'Rules.\n\nMore rules.' },
      { role: 'user', content: 'Hi\n\nCompute this.' },
      { role: 'assistant', content: 'Let me think.\n\nCalling.', toolCalls: [call] },
      { role: 'tool', toolCallId: 'c1', content: '4' },
      { role: 'assistant', content: 'It is 4.\n\nAnything else?' },
      { role: 'user', content: 'Reminder.\n\nNo.' },
    ]);
  });

  it('keeps tool results apart, keeps an assistant turn with only tool calls, and is idempotent', () => {
    const messages: LlmMessage[] = [
      { role: 'user', content: 'Go' },
      { role: 'assistant', content: null, toolCalls: [call, { ...call, id: 'c2' }] },
      { role: 'tool', toolCallId: 'c1', content: '1' },
      { role: 'tool', toolCallId: 'c2', content: '2' },
      { role: 'user', content: '<system-reminder>guidance</system-reminder>' },
    ];
    const once = ensureAlternation(messages);
    expect(once).toEqual(messages);
    expect(ensureAlternation(once)).toEqual(once);
  });

  it('is on by default for the endpoints known to need it', () => {
    expect(needsStrictAlternation('https://api.anthropic.com/v1/', 'claude-x')).toBe(true);
    expect(needsStrictAlternation('http://127.0.0.1:8080/v1', 'Mistral-7B-Instruct')).toBe(true);
    expect(needsStrictAlternation('http://127.0.0.1:8000/v1', 'google/gemma-3-12b-it')).toBe(true);
    expect(needsStrictAlternation('', 'gpt-4o-mini')).toBe(false);
    expect(needsStrictAlternation('http://127.0.0.1:11434/v1', 'llama3.1')).toBe(false);
  });
});
