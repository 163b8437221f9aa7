import type { GuidanceVariant, Todo } from '@stepwise/shared-types';
import { z } from 'zod';
import type { LlmMessage, LlmToolCall } from '../../messages.ts';
import { requestInputSchema } from '../../tools/request-input-tool.ts';
import { shownAnswer } from '../kernel/grounding.ts';
import { defineStrategy, questionTurn, type Run, type RunSuccess } from '../kernel/strategy.ts';
import { runToolCalls, type ToolCallRecord, toolCallMessages, withUniqueIds } from '../kernel/tool-calls.ts';
import { autonomousDemo } from './autonomous-demo.ts';
import { guidanceEvent, messageEvent, todosEvent } from './autonomous-events.ts';
import {
  applyTodoOperation,
  describeTodos,
  incomplete,
  parseTodos,
  serializeTodos,
  TODO_TOOL,
  TodoError,
  TodoOperation,
  TODOS_FILE,
  todosFromUser,
  todoToolSchema,
} from './todos.ts';
import { atStepLimit } from '../kernel/budgets.ts';

const sampleTodos: Todo[] = [{ id: '1', title: 't', status: 'pending' }];

/** The templates in prompts/autonomous/, each with an example of its variables. */
const prompts = {
  system: { question: 'q', step: 1, max_steps: 2, tool_names: ['calculator'], files_manifest: '', todos: sampleTodos },
  guidance_todos_tools: {},
  guidance_todos_no_tools: {},
  guidance_tools: {},
  guidance_no_tools: { first: true },
  reminder_1: { open: 1 },
  reminder_2: { open: 1 },
  reminder_3: { open: 1 },
  planning_loop: { count: 2 },
};

const options = z
  .object({
    workflow_mode: z.boolean().default(false).describe('Keep iterating after a reply without tools or todos, until the marker or the iteration limit'),
  })
  .strict();

type AutonomousRun = Run<z.infer<typeof options>, typeof prompts>;

export const WORKFLOW_COMPLETE = '[WORKFLOW_COMPLETE]';
export const CONTINUE = '[CONTINUE]';
/** Iterations that only re-plan (todo changes without completing one) before the model is told so. */
export const PLANNING_LOOP_LIMIT = 2;

/** What one reply says about going on, its markers taken out. */
export interface ReadReply {
  content: string;
  complete: boolean;
  continue: boolean;
}

/** Finds the markers anywhere in a reply and removes them (and the blank space they leave). */
export function readMarkers(text: string): ReadReply {
  const complete = text.includes(WORKFLOW_COMPLETE);
  const goOn = text.includes(CONTINUE);
  const content = text
    .split(WORKFLOW_COMPLETE)
    .join('')
    .split(CONTINUE)
    .join('')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { content, complete, continue: goOn };
}

/** The cell of the 2×2 matrix: incomplete todos? × tools used in the last iteration? */
export function guidanceVariant(hasIncompleteTodos: boolean, usedTools: boolean): GuidanceVariant {
  if (hasIncompleteTodos) return usedTools ? 'todos_tools' : 'todos_no_tools';
  return usedTools ? 'tools' : 'no_tools';
}

/** What the loop carries from one iteration to the next. */
interface LoopState {
  usedTools: boolean;
  /** 0, or the graduated reminder the next iteration gets (1–3). */
  reminderLevel: number;
  /** Iterations in a row that only touched the todo list without completing a todo. */
  planningIterations: number;
  /** The last text shown: the run's answer when it ends. */
  lastContent: string;
}

/** Why the loop goes on after an iteration, or how the run ends. */
export type Decision = { kind: 'stop'; reason: 'workflow_complete' | 'natural_stop' } | { kind: 'continue'; reminder: boolean };

/**
 * The seed's continuation rule, in its priority order: a marker; tool calls were made; incomplete
 * todos (in the list as it is now) with a graduated reminder; workflow mode; else a natural stop.
 */
export function decide(reply: ReadReply, calledTools: boolean, openTodos: number, workflowMode: boolean): Decision {
  if (reply.complete) return { kind: 'stop', reason: 'workflow_complete' };
  if (reply.continue) return { kind: 'continue', reminder: false };
  if (calledTools) return { kind: 'continue', reminder: false };
  if (openTodos > 0) return { kind: 'continue', reminder: true };
  if (workflowMode) return { kind: 'continue', reminder: false };
  return { kind: 'stop', reason: 'natural_stop' };
}

/**
 * An orchestrator that keeps working without the user prompting it: each iteration is one model
 * call with the tools, steered by a guidance text chosen from what the last iteration did and
 * whether todos remain (sent with the request, never stored), until the model says it is done,
 * stops with nothing left to do, or the iteration limit. The todo list belongs to the session
 * (the file todos.json), so it outlives the run and a person can edit it between runs.
 */
export const autonomous = defineStrategy({
  name: 'autonomous',
  label: 'Autonomous (todo list)',
  description: 'Keeps working on its own through a todo list it writes and ticks off, until the work is done.',
  options,
  prompts,
  demo: autonomousDemo,
  session: {
    clientMessages: {
      /** A person's edit of the todo list between runs: saved as the session file, then `agent_todos` for every tab. */
      async todos_set(message, session) {
        if (message.type !== 'todos_set') return undefined;
        let todos: Todo[];
        try {
          todos = todosFromUser(message.todos);
        } catch (error) {
          if (error instanceof TodoError) return { type: 'error', code: 'invalid_message', message: error.message };
          throw error;
        }
        await session.writeFile(TODOS_FILE, serializeTodos(todos));
        await session.emit(todosEvent(todos));
        return undefined;
      },
    },
  },
  async run(run: AutonomousRun): Promise<RunSuccess> {
    const { control, progress, input } = run;
    const loop: LoopState = { usedTools: false, reminderLevel: 0, planningIterations: 0, lastContent: '' };

    for (let step = 1; ; step++) {
      progress.step = step;
      await run.sink.emit(run.events.turnStart(step));
      const todos = await freshTodos(run, `guide:${step}`);
      const guidance = await guide(run, step, todos, loop);
      control.throwIfStopped();

      const filesManifest = await run.filesManifest();
      const system = run.prompts.render('system', {
        question: input.question,
        step,
        max_steps: input.maxSteps,
        tool_names: input.toolNames,
        files_manifest: filesManifest,
        todos,
      });
      const { text, toolCalls } = await run.llm.complete({
        purpose: 'autonomous.iteration',
        messages: [...conversation(system, run), { role: 'user', content: `<system-reminder>\n${guidance}\n</system-reminder>` }],
        tools: [...run.tools.schemas(input.toolNames), todoToolSchema, requestInputSchema],
        signal: control.signal,
        variables: { question: input.question, step, max_steps: input.maxSteps, tool_names: input.toolNames, files_manifest: filesManifest, todos },
      });
      control.throwIfStopped();

      const reply = readMarkers(text);
      if (reply.content) {
        loop.lastContent = reply.content;
        await run.sink.emit(messageEvent({ run_id: input.runId }, step, shownAnswer(reply.content)));
      }
      const work = toolCalls.length > 0 ? await runIterationTools(run, step, reply.content, toolCalls) : undefined;
      if (!work && reply.content) progress.transcript.push({ role: 'assistant', content: reply.content });
      control.throwIfStopped();

      // Only todo changes that complete nothing count towards a planning loop; any other tool, or a completion, is progress.
      loop.planningIterations = work?.onlyPlanning ? loop.planningIterations + 1 : 0;
      loop.usedTools = work !== undefined;
      const open = incomplete(await freshTodos(run, `check:${step}`)).length;
      const decision = decide(reply, work !== undefined, open, run.options.workflow_mode);
      if (decision.kind === 'stop') return { answer: answerOf(loop, decision.reason, step), steps: step, reason: decision.reason };
      loop.reminderLevel = decision.reminder ? Math.min(loop.reminderLevel + 1, 3) : work ? 0 : loop.reminderLevel;
      if (atStepLimit(step, input)) return { answer: answerAtLimit(loop, open, input.maxSteps), steps: step, reason: 'max_steps' };
    }
  },
});

/**
 * The todo list as it is now, journaled under `key`: the list is read fresh at every check (never
 * a copy the run kept), and a replay reads what the first pass read.
 */
async function freshTodos(run: AutonomousRun, key: string): Promise<Todo[]> {
  const { value } = await run.effects.once('todos', key, async () => {
    try {
      return parseTodos(await run.files.read(TODOS_FILE));
    } catch (error) {
      if (error instanceof TodoError) {
        run.logger.warn({ err: error.message }, 'the todo list could not be read; the run goes on without it');
        return [];
      }
      throw error;
    }
  });
  return value;
}

/** The guidance of this iteration: its matrix cell, the reminder level, the planning-loop note; logged, returned. */
async function guide(run: AutonomousRun, step: number, todos: Todo[], loop: LoopState): Promise<string> {
  const open = incomplete(todos).length;
  const variant = guidanceVariant(open > 0, loop.usedTools);
  const level = open > 0 ? loop.reminderLevel : 0;
  const parts = [run.prompts.render(`guidance_${variant}`, variant === 'no_tools' ? { first: step === 1 } : {})];
  if (level > 0) parts.push(run.prompts.render(`reminder_${level}` as 'reminder_1', { open }));
  if (loop.planningIterations >= PLANNING_LOOP_LIMIT) parts.push(run.prompts.render('planning_loop', { count: loop.planningIterations }));
  const content = parts.map((part) => part.trim()).join('\n\n');
  await run.sink.emit(guidanceEvent({ run_id: run.input.runId }, step, variant, level, content));
  return content;
}

/** What an iteration's tool calls did. */
interface IterationWork {
  /** True when every call was a todo change and none completed a todo. */
  onlyPlanning: boolean;
}

/**
 * Runs one reply's tool calls: todo operations here (in order, each journaled, `agent_todos` after
 * each change), the others through the shared tool path (in parallel, questions one at a time).
 * The call and its results join the transcript in the model's order.
 */
async function runIterationTools(run: AutonomousRun, step: number, content: string, modelCalls: LlmToolCall[]): Promise<IterationWork> {
  const calls = withUniqueIds(modelCalls);
  const records = new Map<string, ToolCallRecord>();
  let completedAny = false;
  for (const call of calls.filter((call) => call.name === TODO_TOOL)) {
    const { record, completed } = await runTodoCall(run, step, call);
    records.set(call.id, record);
    completedAny ||= completed;
  }
  const others = calls.filter((call) => call.name !== TODO_TOOL);
  if (others.length > 0) for (const record of await runToolCalls(others, step, run)) records.set(record.call.id, record);
  run.progress.transcript.push(
    ...toolCallMessages(
      content,
      calls.map((call) => records.get(call.id)!),
    ),
  );
  return { onlyPlanning: others.length === 0 && !completedAny };
}

/** One `todo_operations` call: applied to the list as it is now, saved, announced; an error goes back to the model. */
async function runTodoCall(run: AutonomousRun, step: number, call: LlmToolCall): Promise<{ record: ToolCallRecord; completed: boolean }> {
  const { input, sink, events } = run;
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    args = { raw: call.arguments };
  }
  await sink.emit(events.toolStart(step, call.id, TODO_TOOL, (args && typeof args === 'object' ? args : {}) as Record<string, unknown>));
  const started = performance.now();
  const { value } = await run.effects.once('todo', `${step}:${call.id}`, async () => {
    try {
      const operation = TodoOperation.safeParse(args);
      if (!operation.success) {
        throw new TodoError(
          `Invalid arguments: ${operation.error.issues.map((issue) => `${issue.path.join('.') || 'operation'}: ${issue.message}`).join('; ')}`,
        );
      }
      const outcome = applyTodoOperation(parseTodos(await run.files.read(TODOS_FILE)), operation.data);
      if (outcome.changed) await run.files.write(TODOS_FILE, serializeTodos(outcome.todos));
      return { ok: true as const, todos: outcome.todos, changed: outcome.changed, completed: outcome.completed !== undefined };
    } catch (error) {
      if (error instanceof TodoError) return { ok: false as const, error: error.message };
      throw error;
    }
  });
  const durationMs = Math.round(performance.now() - started);
  if (!value.ok) {
    await sink.emit(events.toolError(step, call.id, TODO_TOOL, value.error, durationMs));
    return { record: { call, content: `Error: ${value.error}`, summary: `${TODO_TOOL}: ${value.error}` }, completed: false };
  }
  const listed = describeTodos(value.todos);
  await sink.emit(events.toolComplete(step, call.id, TODO_TOOL, listed, durationMs));
  if (value.changed) await sink.emit(todosEvent(value.todos, { run_id: input.runId }));
  return { record: { call, content: listed, summary: `${TODO_TOOL}: ${listed}` }, completed: value.completed };
}

function answerOf(loop: LoopState, reason: 'workflow_complete' | 'natural_stop', steps: number): string {
  if (loop.lastContent) return loop.lastContent;
  return reason === 'workflow_complete' ? 'Done.' : `I stopped after ${steps} iteration${steps === 1 ? '' : 's'} without a reply to show.`;
}

function answerAtLimit(loop: LoopState, open: number, maxSteps: number): string {
  const limit = `I reached the limit of ${maxSteps} iteration${maxSteps === 1 ? '' : 's'}`;
  const left = open > 0 ? ` with ${open} todo${open === 1 ? '' : 's'} still open; continue the run to go on.` : '.';
  return loop.lastContent ? `${loop.lastContent}\n\n${limit}${left}` : `${limit}${left}`;
}

/** The messages of an iteration: its instructions, the session so far, the question, the run so far. */
function conversation(system: string, run: AutonomousRun): LlmMessage[] {
  return [{ role: 'system', content: system }, ...run.input.history, questionTurn(run), ...run.progress.transcript];
}
