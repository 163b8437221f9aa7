import { formatDuration, localTimeOf } from '../lib/time.ts';
import type { ToolCallView } from '../state/view-state.ts';
import { SavedFileReferences } from './SavedFileReferences.tsx';

const STATUS_LABEL: Record<ToolCallView['status'], string> = {
  running: 'running',
  done: 'done',
  error: 'failed',
  stopped: 'stopped',
};

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
      {args !== '{}' && <pre className="tool-args" aria-label="Arguments">{args}</pre>}
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
