import { createContext, useContext } from 'react';
import { latestRunId, type RunView, type TodoView, type ViewState } from '../state/view-state.ts';

/** What a person may do with the chat's latest run once nothing runs (absent where the chat can only be read). */
export interface RunEditing {
  /** Replaces the session's todo list (autonomous). */
  saveTodos(todos: TodoView[]): void;
  /** Goes on with `strategy` (a new message of it), with these options (research's Step and Run). */
  goOn(strategy: string, strategyOptions: Record<string, unknown>): void;
  /** Saves a session text file, rejecting with the server's reason (research's document editor). */
  saveText(name: string, text: string): Promise<void>;
}

/**
 * What the strategy panels of a conversation read beyond their run: the session's todo list, which
 * run is the chat's latest, whether it is at work, and what a person may do. The page that shows
 * the conversation provides it, so that nobody hands a panel anything of one strategy.
 */
export interface RunActionsApi {
  /** The session's todo list as it is now, once one was sent. */
  todos: TodoView[] | undefined;
  /** The chat's latest run: the one a person may go on with. */
  latestRunId: string | undefined;
  /** True while the chat's latest message is at work. */
  busy: boolean;
  editing: RunEditing | undefined;
}

export const RunActionsContext = createContext<RunActionsApi | undefined>(undefined);

/** The context's value for a conversation's state, with what a person may do in it (none on a shared page). */
export function runActionsOf(state: ViewState, editing?: RunEditing): RunActionsApi {
  return { todos: state.todos, latestRunId: latestRunId(state.items), busy: state.busy, editing };
}

/** What one run's panel may read and do; each is absent where it does not apply. */
export interface RunActions {
  /** The session's todo list, for the chat's latest run or one still going. */
  todos?: TodoView[];
  /** Under the chat's latest run while nothing runs: the list may be edited. */
  saveTodos?: (todos: TodoView[]) => void;
  /** Under the chat's latest run while nothing runs: go on with the same strategy. */
  goOn?: (strategyOptions: Record<string, unknown>) => void;
  /** Under the chat's latest run while nothing runs: save a session text file. */
  saveText?: (name: string, text: string) => Promise<void>;
}

/** What `api` lets the panel of `run` read and do. */
export function runActionsFor(api: RunActionsApi | undefined, run: RunView): RunActions {
  if (!api) return {};
  const latest = run.id === api.latestRunId;
  const editing = latest && !api.busy ? api.editing : undefined;
  const strategy = run.strategy;
  return {
    ...(api.todos && (latest || !run.end) ? { todos: api.todos } : {}),
    ...(editing ? { saveTodos: editing.saveTodos, saveText: editing.saveText } : {}),
    ...(editing && strategy ? { goOn: (strategyOptions: Record<string, unknown>) => editing.goOn(strategy, strategyOptions) } : {}),
  };
}

/** A strategy panel's own reading of what it may do for its run (nothing outside a conversation's provider). */
export function useRunActions(run: RunView): RunActions {
  return runActionsFor(useContext(RunActionsContext), run);
}
