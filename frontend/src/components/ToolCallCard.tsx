import type { ApprovalDecision } from '@stepwise/shared-types';
import { useState } from 'react';
import { useApprove } from '../lib/approval-context.ts';
import { formatDuration, localTimeOf } from '../lib/time.ts';
import { toolInWords } from '../lib/tool-words.ts';
import type { ToolCallView } from '../state/view-state.ts';
import { SavedFileReferences } from './SavedFileReferences.tsx';

const STATUS_LABEL: Record<ToolCallView['status'], string> = {
  running: 'running',
  done: 'done',
  error: 'failed',
  stopped: 'stopped',
};

const TODO_STATUS_WORDS: Record<string, string> = { pending: 'to do', in_progress: 'in progress', completed: 'done' };

/** A result as a person reads it: the to-do list's raw status lines ("- [pending] 1. …") said in words. */
export function resultInWords(name: string, result: string): string {
  if (name !== 'todo_operations') return result;
  return result.replace(/^- \[(\w+)\] (.+)$/gm, (_line, status: string, rest: string) => `${rest} (${TODO_STATUS_WORDS[status] ?? status.replace(/_/g, ' ')})`);
}

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
    const shown =
      typeof value === 'string'
        ? value
        : typeof value === 'number' || typeof value === 'boolean'
          ? String(value)
          : Array.isArray(value)
            ? `${value.length} item${value.length === 1 ? '' : 's'}`
            : '{…}';
    return `${key.replace(/_/g, ' ')}: ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown}`;
  });
  return parts.join(' · ');
}

/**
 * The approval of a call that waits for a person: its arguments (editable as JSON, checked before
 * sending; the server checks them against the tool's schema too), Approve, Deny with an optional
 * reason, and "Always in this run".
 */
function ApprovalForm({ tool }: { tool: ToolCallView }) {
  const approve = useApprove();
  const [text, setText] = useState(() => JSON.stringify(tool.arguments, null, 2));
  const [reason, setReason] = useState('');
  const [always, setAlways] = useState(false);
  const [problem, setProblem] = useState('');
  const questionId = tool.approval!.questionId;
  const send = (decision: ApprovalDecision['decision']) => {
    if (!approve) return;
    if (decision === 'deny') {
      approve(questionId, { decision, ...(reason.trim() ? { reason: reason.trim() } : {}) });
      return;
    }
    let edited: unknown;
    try {
      edited = JSON.parse(text);
    } catch {
      setProblem('The arguments are not valid JSON');
      return;
    }
    if (typeof edited !== 'object' || edited === null || Array.isArray(edited)) {
      setProblem('The arguments must be a JSON object');
      return;
    }
    setProblem('');
    const changed = JSON.stringify(edited) !== JSON.stringify(tool.arguments);
    approve(questionId, { decision, ...(changed ? { arguments: edited as Record<string, unknown> } : {}), ...(always ? { remember: 'run' as const } : {}) });
  };
  return (
    <form
      className="approval"
      data-testid="approval"
      data-question-id={questionId}
      aria-label={`Approve ${tool.name}`}
      onSubmit={(event) => event.preventDefault()}
    >
      <p className="approval-head">
        <strong>Approve this call?</strong>{' '}
        {tool.approval!.deadline &&
          (Date.parse(tool.approval!.deadline) > Date.now() ? (
            <small>· answer by {new Date(tool.approval!.deadline).toLocaleTimeString()}</small>
          ) : (
            <small>· waiting for you</small>
          ))}
      </p>
      <label className="approval-args">
        Arguments (JSON, editable)
        <textarea value={text} onChange={(event) => setText(event.target.value)} rows={Math.min(10, text.split('\n').length + 1)} spellCheck={false} />
      </label>
      {problem && (
        <p role="alert" className="approval-problem">
          {problem}
        </p>
      )}
      <label className="approval-always">
        <input type="checkbox" checked={always} onChange={(event) => setAlways(event.target.checked)} /> Always in this run
      </label>
      <div className="approval-actions">
        <button type="button" className="primary" onClick={() => send('approve')}>
          Approve
        </button>
        <input
          aria-label="Reason for denying (optional)"
          placeholder="Reason (optional)"
          value={reason}
          maxLength={2000}
          onChange={(event) => setReason(event.target.value)}
        />
        <button type="button" className="danger" onClick={() => send('deny')}>
          Deny
        </button>
      </div>
    </form>
  );
}

/** One tool call: what was asked, and what came back. */
export function ToolCallCard({ tool }: { tool: ToolCallView }) {
  const args = JSON.stringify(tool.arguments, null, 2);
  const waiting = tool.status === 'running' && (tool.approval?.status === 'pending' || tool.approval?.status === 'sent');
  const denied = tool.status === 'error' && /^The (person denied this call|approval policy denies)/.test(tool.error ?? '');
  return (
    <div className={`tool-card tool-${tool.status}`} data-testid="tool-card" aria-busy={tool.status === 'running'}>
      <div className="tool-head">
        {tool.status === 'running' && !waiting ? <span className="spinner" aria-hidden="true" /> : <span className="tool-dot" aria-hidden="true" />}
        <span className="tool-name" title={tool.name}>
          {toolInWords(tool.name)}
        </span>
        <span className="tool-status">{waiting ? 'waiting for your approval' : denied ? 'denied' : STATUS_LABEL[tool.status]}</span>
        {tool.edited && <span className="tool-status">· approved with your edited arguments</span>}
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
      {waiting && tool.approval?.status === 'pending' && <ApprovalForm tool={tool} />}
      {waiting && tool.approval?.status === 'sent' && <p className="approval-note">Sent; waiting for the run…</p>}
      {tool.approval?.status === 'timed_out' && <p className="approval-note">Nobody approved this call in time.</p>}
      {tool.status === 'done' && (
        <pre className="tool-result" aria-label="Result">
          {typeof tool.result === 'string' ? resultInWords(tool.name, tool.result) : JSON.stringify(tool.result, null, 2)}
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
