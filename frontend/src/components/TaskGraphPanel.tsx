import { lazy, Suspense, useCallback, useState } from 'react';
import { formatDuration } from '../lib/time.ts';
import { useRunActions } from '../lib/run-actions-context.ts';
import { useSessionFiles } from '../lib/session-files-context.ts';
import { eventsOf } from '../state/strategy-events.ts';
import { BranchCard } from './BranchCard.tsx';
import { Markdown } from './Markdown.tsx';
import type { StrategyPanelProps } from './strategy-panels.ts';
import { TaskActions } from './TaskActions.tsx';

/** The drawing (and @xyflow/react with it) loads only when a graph is shown: the first bundle stays small. */
const TaskGraphDrawing = lazy(() => import('./TaskGraphDrawing.tsx'));

/** Opens a task's work: its card, unfolded and in view. */
function openTask(taskId: string): void {
  const card = document.querySelector<HTMLDetailsElement>(`[data-testid="branch"][data-node-id="${CSS.escape(taskId)}"]`);
  if (!card) return;
  card.open = true;
  card.scrollIntoView({ block: 'center' });
  card.querySelector<HTMLElement>('summary')?.focus();
}

const AGENT_WORDS: Record<string, string> = {
  literature_scout: 'scout',
  paper_reader: 'reader',
  derivation_coder: 'derivation',
  verifier: 'verifier',
  orchestrator: 'orchestrator',
};

/**
 * A research run: the task board (stages in order with their status and verdict badges, task
 * cards with agent and status, dependencies named), the verdicts with their issues, a link to the
 * state document, and each task's work folded under it (its tool calls, its question).
 */
export function TaskGraphPanel({ run, running }: StrategyPanelProps) {
  const { goOn, saveText } = useRunActions(run);
  const latest = eventsOf(run, 'agent_task_graph').at(-1)?.event;
  const stages = latest?.stages ?? [];
  const verdicts = eventsOf(run, 'agent_verdict').map(({ event }) => event);
  const doc = latest?.doc ?? 'RESEARCH_STATE.md';
  const files = useSessionFiles();
  const followUps = new Set(verdicts.flatMap((verdict) => verdict.follow_up_task_ids));
  const starts = eventsOf(run, 'agent_task_start');
  const ends = eventsOf(run, 'agent_task_complete');
  const timeOf = (taskId: string) => {
    const started = starts.find(({ event }) => event.task_id === taskId);
    const ended = ends.find(({ event }) => event.task_id === taskId);
    return started && ended ? formatDuration(Date.parse(ended.ts) - Date.parse(started.ts)) : undefined;
  };
  // Nothing shows "running" once the run has ended: what it left unfinished waits for the next message.
  const shown = <S extends string>(status: S): S | 'waiting' => (!running && status === 'running' ? 'waiting' : status);
  const reported = verdicts.some((verdict) => verdict.scope === 'final' && verdict.verdict === 'PASS');
  const [drawn, setDrawn] = useState(true);
  const onOpen = useCallback((taskId: string) => openTask(taskId), []);
  return (
    <div className="task-graph-panel" data-testid="task-graph">
      {stages.length > 0 && (
        <div className="graph-switch" role="group" aria-label="How the graph is shown">
          <button type="button" className="ghost" aria-pressed={drawn} onClick={() => setDrawn(true)}>
            Graph
          </button>
          <button type="button" className="ghost" aria-pressed={!drawn} onClick={() => setDrawn(false)}>
            List only
          </button>
        </div>
      )}
      {stages.length > 0 && drawn && (
        <Suspense fallback={<p className="muted">Drawing the graph…</p>}>
          <TaskGraphDrawing
            stages={stages.map((stage) => ({
              ...stage,
              status: shown(stage.status),
              tasks: stage.tasks.map((task) => ({ ...task, status: shown(task.status) })),
            }))}
            followUps={followUps}
            onOpen={onOpen}
          />
        </Suspense>
      )}
      {stages.length === 0
        ? running && <p>Planning the task graph…</p>
        : stages.map((stage) => (
            <section
              key={stage.id}
              className={`graph-stage graph-stage-${stage.status}`}
              data-testid="graph-stage"
              data-status={stage.status}
              aria-label={`Stage ${stage.id}: ${stage.name}`}
            >
              <div className="graph-stage-head">
                <strong>
                  Stage {stage.id} · {stage.name}
                </strong>{' '}
                <span className={`badge branch-status branch-${shown(stage.status)}`}>{shown(stage.status)}</span>
                {stage.verdict && (
                  <span className={`badge verdict verdict-${stage.verdict.toLowerCase()}`} data-testid="stage-verdict">
                    {stage.verdict}
                  </span>
                )}
              </div>
              <ul className="graph-tasks">
                {stage.tasks.map((task) => (
                  <li key={task.id} className="graph-task" data-testid="graph-task" data-status={task.status}>
                    <span className={`badge branch-status branch-${shown(task.status)}`}>{shown(task.status)}</span> <strong>{task.id}</strong> {task.title}{' '}
                    <small>
                      · {AGENT_WORDS[task.agent] ?? task.agent}
                      {task.depends_on.length > 0 && ` · after ${task.depends_on.join(', ')}`}
                      {timeOf(task.id) && ` · ${timeOf(task.id)}`}
                    </small>
                    {followUps.has(task.id) && (
                      <span className="badge follow-up" data-testid="follow-up">
                        follow-up
                      </span>
                    )}
                    <TaskActions run={run} taskId={task.id} status={task.status} running={running} />
                  </li>
                ))}
              </ul>
            </section>
          ))}
      {verdicts.map((verdict) => (
        <p key={verdict.seq} className="graph-verdict" data-testid="verdict">
          <span className={`badge verdict verdict-${verdict.verdict.toLowerCase()}`}>{verdict.verdict}</span>{' '}
          {verdict.scope === 'final' ? 'final' : `${verdict.scope} ${verdict.target}`}
          {verdict.issues.length > 0 && `: ${verdict.issues.join('; ')}`}
          {verdict.follow_up_task_ids.length > 0 && ` · follow-up tasks ${verdict.follow_up_task_ids.join(', ')}`}
        </p>
      ))}
      {reported && files && (
        <ReportViewer load={() => files.fetchBlob('final_report.md').then((blob) => blob.text())} download={() => files.download('final_report.md')} />
      )}
      {latest && (
        <p className="graph-doc">
          The project’s state:{' '}
          <button type="button" className="link" onClick={() => files?.download(doc)}>
            {doc}
          </button>
        </p>
      )}
      {latest && saveText && files && (
        <DocumentEditor name={doc} load={() => files.fetchBlob(doc).then((blob) => blob.text())} save={(text) => saveText(doc, text)} />
      )}
      {latest && goOn && (
        <div className="graph-actions">
          <button type="button" onClick={() => goOn({ mode: 'step' })} title="Run the next wave of tasks, then stop">
            Step
          </button>
          <button type="button" onClick={() => goOn({ mode: 'run' })} title="Run on until an answer, a verifier that blocks, or the iteration limit">
            Run
          </button>
        </div>
      )}
      {run.branches.map((branch) => (
        <BranchCard key={branch.nodeId} run={run} branch={branch} running={running} />
      ))}
    </div>
  );
}

/** The report in the app, as Markdown, on demand; the download stays one click away. */
function ReportViewer({ load, download }: { load: () => Promise<string>; download: () => void }) {
  const [text, setText] = useState<string | undefined>(undefined);
  const [error, setError] = useState('');
  return (
    <div className="graph-doc report-viewer">
      {text === undefined ? (
        <button
          type="button"
          className="link"
          data-testid="open-report"
          onClick={() => {
            setError('');
            load().then(setText, (failure: unknown) => setError((failure as Error).message));
          }}
        >
          Open the report (final_report.md)
        </button>
      ) : (
        <button type="button" className="link" onClick={() => setText(undefined)}>
          Close the report
        </button>
      )}{' '}
      ·{' '}
      <button type="button" className="link" onClick={download}>
        Download
      </button>
      {error && <span role="alert"> · {error}</span>}
      {text !== undefined && <Markdown text={text} className="report" />}
    </div>
  );
}

/** The state document as text, editable between runs; the server checks it before saving (a broken graph is refused with its line). */
function DocumentEditor({ name, load, save }: { name: string; load: () => Promise<string>; save: (text: string) => Promise<void> }) {
  const [text, setText] = useState<string | undefined>(undefined);
  const [status, setStatus] = useState('');
  const [saving, setSaving] = useState(false);
  if (text === undefined) {
    return (
      <button
        type="button"
        className="ghost"
        onClick={() => {
          setStatus('');
          load().then(setText, (error: unknown) => setStatus((error as Error).message));
        }}
      >
        Edit {name}
        {status && <span role="alert"> · {status}</span>}
      </button>
    );
  }
  return (
    <form
      className="doc-editor"
      aria-label={`Edit ${name}`}
      onSubmit={(event) => {
        event.preventDefault();
        setSaving(true);
        save(text).then(
          () => {
            setSaving(false);
            setText(undefined);
            setStatus('');
          },
          (error: unknown) => {
            setSaving(false);
            setStatus((error as Error).message);
          },
        );
      }}
    >
      <textarea aria-label={name} value={text} onChange={(event) => setText(event.target.value)} spellCheck={false} rows={18} />
      {status && (
        <p role="alert" className="doc-editor-error" data-testid="doc-error">
          {status}
        </p>
      )}
      <div className="graph-actions">
        <button type="submit" disabled={saving}>
          Save
        </button>
        <button type="button" className="ghost" onClick={() => setText(undefined)}>
          Cancel
        </button>
      </div>
    </form>
  );
}
