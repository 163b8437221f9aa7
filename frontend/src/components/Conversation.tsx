import { type ReactNode, useEffect, useRef } from 'react';
import { awaitingAnswer } from '../state/reducer.ts';
import { messagesAfterRuns } from '../state/steering.ts';
import { type ChatItem, latestRunId, type RunView, type ViewState } from '../state/view-state.ts';
import { CopyButton } from './CopyButton.tsx';
import { Markdown } from './Markdown.tsx';
import { ChatSpending } from './RunSpending.tsx';
import { RunTimeline } from './RunTimeline.tsx';
import { PaperclipIcon } from './Icons.tsx';
import { WaitingMessages } from './SteerNotes.tsx';

/** The conversation: user turns, agent runs, assistant answers. */
export function Conversation({
  state,
  now,
  onContinue,
  onRewind,
  footer,
}: {
  state: ViewState;
  /** Shown after the last item, inside the scrolling conversation (an offer that must not take the dock's room). */
  footer?: ReactNode;
  now: Date;
  onContinue?: (runId: string, extraSteps: number, maxCostUsd?: number) => void;
  /** Goes back to the end of a run's step and on from there (`extraSteps` more, else the server's default). */
  onRewind?: (runId: string, step: number, extraSteps?: number) => void;
}) {
  const endRef = useRef<HTMLDivElement>(null);
  const last = state.items.at(-1);
  // Only the chat's last run can be continued, once it ended short of an answer and nothing runs.
  const lastRunId = state.items.findLast((item) => item.kind === 'run' || item.kind === 'user')?.kind === 'run' ? latestRunId(state.items) : undefined;
  // Each run's answer, and the branch a run can be compared with: the run it was rewound from, or the last one a rollback folded away before it.
  const answers: Record<string, string | undefined> = {};
  for (const item of state.items) if (item.kind === 'assistant' && item.runId) answers[item.runId] = item.content;
  const compareTarget = (runId: string): RunView | undefined => {
    const run = state.runs[runId];
    if (run?.resumedFrom && state.runs[run.resumedFrom]) return state.runs[run.resumedFrom];
    const index = state.items.findIndex((item) => item.kind === 'run' && item.runId === runId);
    const divider = state.items.slice(0, index).findLastIndex((item) => item.kind === 'rollback');
    if (divider < 0 || state.items.slice(divider + 1, index).some((item) => item.kind === 'run')) return undefined;
    const folded = state.items.slice(0, divider).findLast((item) => item.kind === 'run' && item.rolledBack) as { runId: string } | undefined;
    return folded ? state.runs[folded.runId] : undefined;
  };
  const continuable = (runId: string) => {
    const end = state.runs[runId]?.end;
    return (
      runId === lastRunId &&
      !state.busy &&
      end !== undefined &&
      (['max_steps', 'unresolved', 'stopped', 'input_timeout', 'failed'].includes(end.kind) || (end.kind === 'answered' && end.reason === 'budget'))
    );
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: the listed values are the triggers: anything new at the end scrolls it into view
  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: 'end' });
  }, [state.items.length, last, state.streamingAnswer, state.lastSeq]);

  const renderItem = (item: ChatItem) => {
    switch (item.kind) {
      case 'user':
        return (
          <div key={item.id} className="turn turn-user" data-testid="user-turn" {...(item.queued ? { 'data-queued': 'true' } : {})}>
            {item.queued && <span className="turn-note">Queued during the run before</span>}
            <div className="bubble">
              {item.content}
              {item.attachments?.length ? (
                <div className="bubble-attachments">
                  <PaperclipIcon /> {item.attachments.join(', ')}
                </div>
              ) : null}
            </div>
          </div>
        );
      case 'assistant':
        return (
          <div key={item.id} className="turn turn-assistant" data-testid="assistant-turn">
            <Markdown text={item.content} className="bubble" />
            <CopyButton text={item.content} label="Copy the answer" />
          </div>
        );
      case 'failure':
        return (
          <div key={item.id} className="turn turn-assistant" data-testid="answer-failure">
            <div className="bubble failure" role="status" title={`The answer failed (${item.code})`}>
              {item.message}
            </div>
          </div>
        );
      case 'rollback':
        return (
          <div key={item.id} className="rollback-divider" role="separator" data-testid="rollback-divider">
            Rolled back to {item.label}: what came after is folded above and no longer part of the conversation.
          </div>
        );
      case 'run': {
        const run = state.runs[item.runId];
        const label = state.session?.strategy_catalog?.find((strategy) => strategy.name === run?.strategy)?.label;
        const traceUrl = run?.traceId ? traceLink(state.session?.trace_url_template, run.traceId) : undefined;
        return run ? (
          <RunTimeline
            key={item.id}
            run={run}
            now={now}
            {...(item.rolledBack ? { rolledBack: true } : {})}
            {...(compareTarget(item.runId) ? { compareWith: { run: compareTarget(item.runId)!, answers } } : {})}
            {...(label ? { strategyLabel: label } : {})}
            {...(traceUrl ? { traceUrl } : {})}
            {...(onRewind && !state.busy && !item.rolledBack && run.end ? { onRewind: (step: number) => onRewind(item.runId, step) } : {})}
            {...(onRewind && run.rewoundTo !== undefined && item.runId === lastRunId && !state.busy
              ? {
                  // Rolled back to a step and not gone on yet: Continue goes on from that step.
                  onContinue: (extra: number) => onRewind(item.runId, run.rewoundTo!, extra),
                  continueSteps: state.session?.limits.max_steps_default ?? 5,
                }
              : onContinue && continuable(item.runId)
                ? {
                    onContinue: (extra: number, maxCostUsd?: number) => onContinue(item.runId, extra, maxCostUsd),
                    continueSteps: state.session?.limits.max_steps_default ?? 5,
                  }
                : {})}
          />
        ) : null;
      }
      default: {
        const unexpected: never = item;
        return unexpected;
      }
    }
  };

  return (
    <main className="conversation" aria-live="polite">
      {state.items.length === 0 && (
        <div className="empty">
          <h2>Watch the agent think, act and observe.</h2>
          <p>
            In Agent mode each step shows how the agent <strong>reasons</strong>, which tools it calls to <strong>act</strong>, and what it{' '}
            <strong>observes</strong> in the results. Try “What is (17+25)*3?”.
          </p>
          {state.session?.demo && (
            <p className="demo-hint">
              You are talking to the offline demo model. To use a real one, start Stepwise with <code>OPENAI_BASE_URL</code> (and <code>OPENAI_API_KEY</code>)
              pointing at any OpenAI-compatible endpoint.
            </p>
          )}
        </div>
      )}
      {foldRolledBack(state.items).map((group) =>
        group.rolledBack ? (
          <details key={`rolled-${group.items[0]!.id}`} className="rolled-back" data-testid="rolled-back">
            <summary>
              Rolled back: no longer part of the conversation ({group.items.length} item{group.items.length === 1 ? '' : 's'})
            </summary>
            {group.items.map(renderItem)}
          </details>
        ) : (
          group.items.map(renderItem)
        ),
      )}
      {awaitingAnswer(state) && (
        <div className="turn turn-assistant pending" data-testid="assistant-pending">
          <div className="bubble muted">Thinking…</div>
        </div>
      )}
      {state.streamingAnswer !== undefined && (
        <div className="turn turn-assistant streaming" data-testid="assistant-streaming">
          <Markdown text={state.streamingAnswer} className="bubble" />
        </div>
      )}
      <WaitingMessages messages={messagesAfterRuns(state)} label="Messages waiting to be sent" />
      <ChatSpending runs={state.runs} />
      {footer}
      <div ref={endRef} />
    </main>
  );
}

/** Consecutive items a rollback dropped, grouped so they can be folded together. */
function foldRolledBack(items: ChatItem[]): Array<{ rolledBack: boolean; items: ChatItem[] }> {
  const groups: Array<{ rolledBack: boolean; items: ChatItem[] }> = [];
  for (const item of items) {
    const rolledBack = item.rolledBack === true;
    const last = groups.at(-1);
    if (last && last.rolledBack === rolledBack) last.items.push(item);
    else groups.push({ rolledBack, items: [item] });
  }
  return groups;
}

/** The link to a run's trace: the server's template with the trace id in it; only http(s) links. */
export function traceLink(template: string | undefined, traceId: string): string | undefined {
  if (!template || !/^[0-9a-f]{32}$/.test(traceId)) return undefined;
  const url = template.replaceAll('{trace_id}', traceId);
  return /^https?:\/\//i.test(url) ? url : undefined;
}
