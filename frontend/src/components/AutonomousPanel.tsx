import { useState } from 'react';
import { useRunActions } from '../lib/run-actions-context.ts';
import { eventsOf } from '../state/strategy-events.ts';
import type { TodoView } from '../state/view-state.ts';
import { Markdown } from './Markdown.tsx';
import type { StrategyPanelProps } from './strategy-panels.ts';
import { ToolCallCard } from './ToolCallCard.tsx';

const STATUS_WORDS: Record<TodoView['status'], string> = { pending: 'to do', in_progress: 'in progress', completed: 'done' };
const NEXT_STATUS: Record<TodoView['status'], TodoView['status']> = { pending: 'in_progress', in_progress: 'completed', completed: 'pending' };

/**
 * An autonomous run: its todo list, live (grouped: in progress, to do, done), then each iteration
 * as it happened: the guidance it was given (a small muted note, so a person sees the steering),
 * its text, and its tool cards. Under the chat's latest run, once nothing runs, the list can be
 * edited: the next run works from it.
 */
export function AutonomousPanel({ run, running }: StrategyPanelProps) {
  const { todos: sessionTodos, saveTodos } = useRunActions(run);
  const own = eventsOf(run, 'agent_todos').at(-1)?.event.todos;
  const todos = (saveTodos || running ? sessionTodos : undefined) ?? own ?? [];
  const guidances = eventsOf(run, 'agent_guidance');
  const messages = eventsOf(run, 'agent_message');
  return (
    <div className="autonomous-panel" data-testid="autonomous-panel">
      <TodoList todos={todos} {...(saveTodos && !running ? { onSave: saveTodos } : {})} />
      {run.steps.map((step) => {
        const guidance = guidances.find(({ event }) => event.step === step.step)?.event;
        const message = messages.find(({ event }) => event.step === step.step)?.event;
        const level = guidance?.level ?? 0;
        return (
          <section key={step.step} className="iteration" data-testid="iteration" aria-label={`Iteration ${step.step}`}>
            <div className="iteration-head">Iteration {step.step}</div>
            {guidance && (
              <details className={`guidance-note${level > 0 ? ' guidance-reminder' : ''}`} data-testid="guidance-note">
                <summary>{guidanceInWords(guidance.variant, level)}</summary>
                <p className="guidance-told">What the model was told:</p>
                <pre>{guidance.content}</pre>
              </details>
            )}
            {message && <Markdown text={message.content} className="iteration-text" />}
            {step.tools.map((tool) => (
              <ToolCallCard key={tool.id} tool={tool} />
            ))}
          </section>
        );
      })}
    </div>
  );
}

/** The steering of one iteration in plain words (what the model was told stays folded below it). */
export function guidanceInWords(variant: string, level: number): string {
  if (level > 0) return `Reminder ${level} of 3: to-dos are still open; finish them, or say why they cannot be done.`;
  switch (variant) {
    case 'todos_tools':
      return 'Steering: to-dos are open and tools were just used; mark the next to-do in progress, do it, then mark it completed.';
    case 'todos_no_tools':
      return 'Steering: to-dos are open but no tool was used; work on the next one with a tool.';
    case 'tools':
      return 'Steering: tools were just used; go on with them, or give the answer.';
    default:
      return 'Steering: use a tool if one helps, or give the answer.';
  }
}

/** The list, grouped by status; with `onSave`, editable: add, rename, cycle a status, remove. */
function TodoList({ todos, onSave }: { todos: TodoView[]; onSave?: (todos: TodoView[]) => void }) {
  const [draft, setDraft] = useState('');
  const groups: TodoView['status'][] = ['in_progress', 'pending', 'completed'];
  const save = (next: TodoView[]) => onSave?.(next);
  const add = () => {
    const title = draft.trim();
    if (!title) return;
    save([...todos, { id: String(Math.max(0, ...todos.map((todo) => Number.parseInt(todo.id, 10) || 0)) + 1), title, status: 'pending' }]);
    setDraft('');
  };
  const cycle = (todo: TodoView) => {
    const status = NEXT_STATUS[todo.status];
    // At most one todo is in progress: starting one puts the running one back to "to do".
    save(
      todos.map((other) =>
        other.id === todo.id ? { ...other, status } : status === 'in_progress' && other.status === 'in_progress' ? { ...other, status: 'pending' } : other,
      ),
    );
  };
  return (
    <section className="todo-list" aria-label="To-dos" data-testid="todo-list">
      <strong>To-dos</strong>{' '}
      {todos.length > 0 && (
        <small>
          {todos.filter((todo) => todo.status === 'completed').length} of {todos.length} done
        </small>
      )}
      {todos.length === 0 && <p className="muted">No to-dos{onSave ? ' yet: add one, or let the agent write its list.' : '.'}</p>}
      {groups.map((status) => {
        const items = todos.filter((todo) => todo.status === status);
        return items.length === 0 ? null : (
          <ul key={status} className={`todo-group todo-${status}`} aria-label={STATUS_WORDS[status]}>
            {items.map((todo) => (
              <li key={todo.id} data-testid="todo" data-status={todo.status}>
                {onSave ? (
                  <button type="button" className={`badge todo-status todo-status-${status}`} title="Change the status" onClick={() => cycle(todo)}>
                    {STATUS_WORDS[status]}
                  </button>
                ) : (
                  <span className={`badge todo-status todo-status-${status}`}>{STATUS_WORDS[status]}</span>
                )}{' '}
                {onSave ? (
                  <input
                    aria-label={`To-do ${todo.id}`}
                    defaultValue={todo.title}
                    onBlur={(event) => {
                      const title = event.target.value.trim();
                      if (title && title !== todo.title) save(todos.map((other) => (other.id === todo.id ? { ...other, title } : other)));
                    }}
                  />
                ) : (
                  <span className="todo-title">{todo.title}</span>
                )}
                {onSave && (
                  <button
                    type="button"
                    className="ghost"
                    aria-label={`Remove to-do ${todo.id}`}
                    onClick={() => save(todos.filter((other) => other.id !== todo.id))}
                  >
                    ×
                  </button>
                )}
              </li>
            ))}
          </ul>
        );
      })}
      {onSave && (
        <form
          className="todo-add"
          onSubmit={(event) => {
            event.preventDefault();
            add();
          }}
        >
          <input aria-label="New to-do" placeholder="Add a to-do…" value={draft} onChange={(event) => setDraft(event.target.value)} maxLength={500} />
          <button type="submit" disabled={!draft.trim()}>
            Add
          </button>
        </form>
      )}
    </section>
  );
}
