import { type Todo, TodoStatus } from '@stepwise/shared-types';
import { z } from 'zod';
import type { LlmToolSchema } from '../../messages.ts';

/** The session file that holds a session's todo list: it outlives runs, and the user may edit it between them. */
export const TODOS_FILE = 'todos.json';
export const TODO_TOOL = 'todo_operations';
/** Most todos a list holds. */
export const MAX_TODOS = 100;

const StoredTodos = z.object({ todos: z.array(z.object({ id: z.string(), title: z.string(), status: TodoStatus })) });

/** The list as the file holds it; a missing file is an empty list, a damaged one an error naming the file. */
export function parseTodos(text: string | undefined): Todo[] {
  if (text === undefined || !text.trim()) return [];
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new TodoError(`${TODOS_FILE} is not valid JSON; fix or delete it`);
  }
  const parsed = StoredTodos.safeParse(data);
  if (!parsed.success) throw new TodoError(`${TODOS_FILE} is not a todo list ({"todos":[{"id","title","status"}]}); fix or delete it`);
  return parsed.data.todos;
}

export function serializeTodos(todos: readonly Todo[]): string {
  return `${JSON.stringify({ todos }, null, 2)}\n`;
}

/** A todo operation the model (or a person) got wrong: its message goes back to the model as the tool's error. */
export class TodoError extends Error {}

/** The arguments of `todo_operations`, as PROTOCOL.md gives them. */
export const TodoOperation = z.discriminatedUnion('operation', [
  z.object({ operation: z.literal('read') }),
  z.object({
    operation: z.literal('write'),
    todos: z.array(z.object({ title: z.string().trim().min(1).max(500), status: TodoStatus.optional() })).max(MAX_TODOS),
  }),
  z.object({
    operation: z.literal('update'),
    id: z.string().min(1),
    status: TodoStatus.optional(),
    title: z.string().trim().min(1).max(500).optional(),
  }),
]);
export type TodoOperation = z.infer<typeof TodoOperation>;

/** The tool as the model is offered it (autonomous runs only). */
export const todoToolSchema: LlmToolSchema = {
  name: TODO_TOOL,
  description:
    'Keep the todo list of this chat. "read" returns it; "write" replaces it with new todos (titles, optional status); ' +
    '"update" changes one todo\'s status (pending, in_progress, completed) or title by its id. At most one todo may be in_progress.',
  parameters: {
    type: 'object',
    properties: {
      operation: { type: 'string', enum: ['read', 'write', 'update'] },
      todos: {
        type: 'array',
        description: 'For "write": the whole new list',
        items: {
          type: 'object',
          properties: { title: { type: 'string' }, status: { type: 'string', enum: TodoStatus.options } },
          required: ['title'],
        },
      },
      id: { type: 'string', description: 'For "update": the todo to change' },
      status: { type: 'string', enum: TodoStatus.options, description: 'For "update": its new status' },
      title: { type: 'string', description: 'For "update": its new title' },
    },
    required: ['operation'],
  },
};

/** What one operation did: the list after it, and what the caller reads back. */
export interface TodoOutcome {
  todos: Todo[];
  changed: boolean;
  /** The todo an update completed, if it did (completing a todo is progress). */
  completed?: Todo;
}

/**
 * Applies one operation to a list (pure). Ids are positions ("1", "2", …) on write, so a list
 * written the same way gets the same ids, and a replayed run names its todos the same.
 */
export function applyTodoOperation(todos: readonly Todo[], operation: TodoOperation): TodoOutcome {
  switch (operation.operation) {
    case 'read':
      return { todos: [...todos], changed: false };
    case 'write': {
      const next = operation.todos.map((todo, index): Todo => ({ id: String(index + 1), title: todo.title, status: todo.status ?? 'pending' }));
      checkOneInProgress(next);
      return { todos: next, changed: true };
    }
    case 'update': {
      const index = todos.findIndex((todo) => todo.id === operation.id);
      if (index < 0) {
        throw new TodoError(`No todo "${operation.id}"; the ids are ${todos.map((todo) => todo.id).join(', ') || 'none (the list is empty)'}`);
      }
      const before = todos[index]!;
      const after: Todo = { ...before, ...(operation.status ? { status: operation.status } : {}), ...(operation.title ? { title: operation.title } : {}) };
      const next = todos.map((todo, i) => (i === index ? after : todo));
      checkOneInProgress(next);
      const completed = before.status !== 'completed' && after.status === 'completed' ? after : undefined;
      return { todos: next, changed: true, ...(completed ? { completed } : {}) };
    }
  }
}

function checkOneInProgress(todos: readonly Todo[]): void {
  const running = todos.filter((todo) => todo.status === 'in_progress');
  if (running.length > 1) {
    throw new TodoError(`At most one todo may be in_progress (now: ${running.map((todo) => `"${todo.id}"`).join(', ')}); complete one first`);
  }
}

/** The list as the model reads it back. */
export function describeTodos(todos: readonly Todo[]): string {
  if (todos.length === 0) return 'The todo list is empty.';
  return todos.map((todo) => `- [${todo.status}] ${todo.id}. ${todo.title}`).join('\n');
}

export function incomplete(todos: readonly Todo[]): Todo[] {
  return todos.filter((todo) => todo.status !== 'completed');
}

/** A list a person sent (todos_set): ids kept where given and unique, else positions. */
export function todosFromUser(items: readonly { id?: string | undefined; title: string; status: Todo['status'] }[]): Todo[] {
  const used = new Set<string>();
  const todos = items.map((item, index): Todo => {
    let id = item.id && !used.has(item.id) ? item.id : String(index + 1);
    while (used.has(id)) id = `${id}_`;
    used.add(id);
    return { id, title: item.title, status: item.status };
  });
  checkOneInProgress(todos);
  return todos;
}
