import { describe, expect, it, vi } from 'vitest';
import { type RunEditing, runActionsFor, runActionsOf } from '../../frontend/src/lib/run-actions-context.ts';
import { emptyRun } from '../../frontend/src/state/run-tree.ts';
import { initialViewState, type RunView, type ViewState } from '../../frontend/src/state/view-state.ts';

const todos = [{ id: '1', title: 'Write the report', status: 'pending' as const }];
const ended = (id: string, strategy: string): RunView => ({ ...emptyRun(id), strategy, end: { kind: 'answered', steps: 2 } });

/** A chat of two ended runs, an autonomous one and then a research one, with the session's todo list. */
function chat(busy: boolean): ViewState {
  return {
    ...initialViewState,
    busy,
    todos,
    runs: { 'run-1': ended('run-1', 'autonomous'), 'run-2': ended('run-2', 'research') },
    items: [
      { kind: 'user', id: 'u1', content: 'Work through the list', order: 0.5 },
      { kind: 'run', id: 'rrun-1', runId: 'run-1', order: 1 },
      { kind: 'user', id: 'u2', content: 'Research it', order: 5.5 },
      { kind: 'run', id: 'rrun-2', runId: 'run-2', order: 6 },
    ],
  };
}

const editing = () => ({ saveTodos: vi.fn(), goOn: vi.fn(), saveText: vi.fn(async () => undefined) }) satisfies RunEditing;

describe('what a strategy panel may read and do beyond its run', () => {
  it('offers edits and going on with its strategy under the chat’s latest run only, and only once nothing runs', () => {
    const handlers = editing();
    const state = chat(false);
    const latest = runActionsFor(runActionsOf(state, handlers), state.runs['run-2']!);
    expect(Object.keys(latest).sort()).toEqual(['goOn', 'saveText', 'saveTodos', 'todos']);
    latest.goOn!({ mode: 'step' });
    expect(handlers.goOn).toHaveBeenCalledWith('research', { mode: 'step' });
    // An earlier run that ended gets nothing of the session's.
    expect(runActionsFor(runActionsOf(state, handlers), state.runs['run-1']!)).toEqual({});
    // While the chat works, the latest run keeps the todo list and offers no edit.
    const working = chat(true);
    expect(runActionsFor(runActionsOf(working, handlers), working.runs['run-2']!)).toEqual({ todos });
  });

  it('gives a read-only chat’s panels the todo list alone, also for a run still going; outside a conversation nothing', () => {
    const state = chat(false);
    expect(runActionsFor(runActionsOf(state), state.runs['run-2']!)).toEqual({ todos });
    expect(runActionsFor(runActionsOf(state), emptyRun('run-3'))).toEqual({ todos });
    expect(runActionsFor(undefined, state.runs['run-2']!)).toEqual({});
  });
});
