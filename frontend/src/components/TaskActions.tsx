import { useState } from 'react';
import { useSteering } from '../lib/steering-context.ts';
import { branchName } from '../state/branch-kind.ts';
import { branchPlace, waitingSteers } from '../state/steering.ts';
import { eventsOf } from '../state/strategy-events.ts';
import type { RunView } from '../state/view-state.ts';
import { receiptLine } from './RunTimeline.tsx';

/**
 * One task's own controls while its run goes on: a message for it and Stop this task while it runs;
 * once stopped, its stop receipt and Run again. The run's other tasks go on either way.
 */
export function TaskActions({ run, taskId, status, running }: { run: RunView; taskId: string; status: string; running: boolean }) {
  const steering = useSteering();
  const [writing, setWriting] = useState(false);
  const [text, setText] = useState('');
  // Run again waits for the tasks running now: it is said until the task starts again (per stop).
  const [againAfter, setAgainAfter] = useState<number | undefined>(undefined);
  const stop = run.stoppedBranches?.[taskId];
  const again = stop !== undefined && againAfter === stop.seq;
  // A stopped task that was run again is no longer stopped, whatever an older graph says.
  const restarted = stop !== undefined && eventsOf(run, 'agent_task_start').some((start) => start.event.task_id === taskId && start.seq > stop.seq);
  const stopped = status === 'stopped' || (stop !== undefined && !restarted && status !== 'done');
  const mayAct = steering !== undefined && !steering.readOnly && running;
  const working = status === 'running' && !stopped;
  const waiting = waitingSteers(steering?.pending ?? [], run.id, steering?.activeRunId)
    .filter((message) => message.nodeId === taskId)
    .at(-1);
  const landed = run.steers?.filter((steer) => steer.nodeId === taskId).at(-1);
  const last = waiting ?? landed;
  if (!stopped && !(mayAct && working) && !last) return null;
  return (
    <div className="task-actions" role="group" aria-label={branchName(run.strategy, taskId)} data-testid="task-actions">
      {stopped && (
        <p className="task-receipt" data-testid="task-receipt">
          Stopped{stop?.by ? ` by ${stop.by}` : ''}
          {stop ? `: ${stop.calls.length > 0 ? receiptLine(run, stop.calls) : 'no tool call was running'}` : ''}
          {again && mayAct && ' · it runs again when the tasks running now finish'}
        </p>
      )}
      {last && (
        <p className="task-message" data-testid="task-message">
          Your message: “{last.content}” ·{' '}
          {waiting ? (waiting.status === 'sending' ? 'sending…' : 'waiting for its next model call') : branchPlace(landed!, run.strategy)}
        </p>
      )}
      {mayAct && (working || stopped) && (
        <div className="task-buttons">
          {working && (
            <>
              <button type="button" className="ghost" aria-expanded={writing} onClick={() => setWriting((now) => !now)}>
                Message this task
              </button>
              <button type="button" className="ghost task-stop" onClick={() => steering.stopBranch(taskId)}>
                Stop this task
              </button>
            </>
          )}
          {stopped && !again && (
            <button
              type="button"
              className="ghost"
              onClick={() => {
                if (steering.resumeBranch(taskId)) setAgainAfter(stop?.seq);
              }}
              title="Run this task again; its completed calls are kept"
            >
              Run again
            </button>
          )}
        </div>
      )}
      {mayAct && working && writing && (
        <form
          className="task-message-form"
          onSubmit={(event) => {
            event.preventDefault();
            const content = text.trim();
            if (content && steering.messageBranch(taskId, content)) {
              setText('');
              setWriting(false);
            }
          }}
        >
          <input
            aria-label={`Message to task ${taskId}`}
            placeholder="It reaches this task before its next model call"
            value={text}
            onChange={(event) => setText(event.target.value)}
          />
          <button type="submit" disabled={!text.trim()}>
            Send to task
          </button>
        </form>
      )}
    </div>
  );
}
