import { formatDuration, localTimeOf } from '../lib/time.ts';
import type { ToolCallView } from '../state/view-state.ts';
import { SavedFileReferences } from './SavedFileReferences.tsx';

const STATUS_LABEL: Record<ToolCallView['status'], string> = {
  running: 'running',
  done: 'done',
  error: 'failed',
  stopped: 'stopped',
};

/** A tool call's arguments as a line of words: the to-do tool's operations said plainly, others as "name: value". */
export function argumentsInWords(name: string, args: Record<string, unknown>): string {
  if (name === 'todo_operations') {
    const todos = Array.isArray(args.todos) ? (args.todos as Array<{ title?: unknown }>) : [];
    switch (args.operation) {
      case 'write':
        return `Write ${todos.length} to-do${todos.length === 1 ? '' : 's'}: ${todos.map((todo) => String(todo.title ?? '')).join('; ')}`;
      case 'update':
        return `Mark to-do ${String(args.id ?? '?')} ${String(args.status ?? 'changed').replace('_', ' ')}${args.title ? ` (“${String(args.title)}”)` : ''}`;
      case 'list':
        return 'List the to-dos';
      default:
        break;
    }
  }
  const parts = Object.entries(args).map(([key, value]) => {
    const shown = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : Array.isArray(value) ? `${value.length} item${value.length === 1 ? '' : 's'}` : '{…}';
    return `${key.replace(/_/g, ' ')}: ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown}`;
  });
  return parts.join(' · ');
}

/** One tool call: what was asked, and what came back. */
export function ToolCallCard({ tool }: { tool: ToolCallView }) {
  const args = JSON.stringify(tool.arguments, null, 2);
  return (
    <div className={`tool-card tool-${tool.status}`} data-testid="tool-card" aria-busy={tool.status === 'running'}>
      <div className="tool-head">
        {tool.status === 'running' ? <span className="spinner" aria-hidden="true" /> : <span className="tool-dot" aria-hidden="true" />}
        <code className="tool-name">{tool.name}</code>
        <span className="tool-status">{STATUS_LABEL[tool.status]}</span>
        {tool.durationMs !== undefined && <span className="tool-duration">{formatDuration(tool.durationMs)}</span>}
      </div>
      {args !== '{}' && <p className="tool-args-line">{argumentsInWords(tool.name, tool.arguments)}</p>}
      {args !== '{}' && (
        <details className="show-json">
          <summary>Show JSON</summary>
          <pre className="tool-args" aria-label="Arguments">
            {args}
          </pre>
        </details>
      )}
      {tool.status === 'running' && tool.progress && (
        <div className="tool-progress">
          <progress
            value={tool.progress.total ? tool.progress.value : undefined}
            max={tool.progress.total ?? undefined}
            aria-label={`Progress of ${tool.name}`}
          />
          <span>
            {tool.progress.total ? `${tool.progress.value} of ${tool.progress.total}` : `${tool.progress.value}`}
            {tool.progress.message ? ` · ${tool.progress.message}` : ''}
          </span>
        </div>
      )}
      {tool.status === 'done' && (
        <pre className="tool-result" aria-label="Result">
          {typeof tool.result === 'string' ? tool.result : JSON.stringify(tool.result, null, 2)}
        </pre>
      )}
      {tool.status === 'done' && typeof tool.result === 'string' && localTimeOf(tool.result) && (
        <p className="tool-local-time">{localTimeOf(tool.result)}, your time</p>
      )}
      {tool.status === 'done' && typeof tool.result === 'string' && <SavedFileReferences result={tool.result} />}
      {tool.status === 'error' && (
        <pre className="tool-error" aria-label="Error">
          {tool.error}
        </pre>
      )}
    </div>
  );
}
