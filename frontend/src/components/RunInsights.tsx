import { useState } from 'react';
import { buildTimeline, seconds, spendingByPurpose } from '../state/timeline.ts';
import type { RunView } from '../state/view-state.ts';
import { Markdown } from './Markdown.tsx';

/**
 * A run's timeline: one row per branch, bars for model calls, tool calls and waiting for you on a
 * shared time axis. Each bar is a button (reachable by keyboard) whose label says what it was.
 */
export function RunTimelineChart({ run }: { run: RunView }) {
  const { rows, duration } = buildTimeline(run);
  // A bar's details open on click or tap too, not only on hover (a phone has no hover).
  const [chosen, setChosen] = useState<string | undefined>(undefined);
  if (rows.length === 0) return <p className="muted">Nothing to draw yet.</p>;
  const percent = (ms: number) => `${((ms / duration) * 100).toFixed(3)}%`;
  return (
    <div className="timeline" data-testid="timeline" role="group" aria-label="Run timeline">
      <div className="timeline-axis" aria-hidden="true">
        {[0, 0.25, 0.5, 0.75, 1].map((at) => (
          <span key={at} style={{ left: `${at * 100}%` }}>
            {seconds(duration * at)}
          </span>
        ))}
      </div>
      {rows.map((row) => (
        <div key={row.key} className="timeline-row" data-testid="timeline-row">
          <span className="timeline-label">{row.label}</span>
          <div className="timeline-track">
            {row.bars.map((bar, index) => (
              <button
                key={`${bar.kind}-${index}`}
                type="button"
                className={`timeline-bar timeline-${bar.kind}`}
                data-testid="timeline-bar"
                data-kind={bar.kind}
                data-duration={Math.round(bar.end - bar.start)}
                style={{ left: percent(bar.start), width: `max(3px, ${percent(bar.end - bar.start)})` }}
                title={bar.detail}
                aria-label={`${row.label}: ${bar.detail}`}
                aria-pressed={chosen === `${row.label}: ${bar.detail}`}
                onClick={() => setChosen((shown) => (shown === `${row.label}: ${bar.detail}` ? undefined : `${row.label}: ${bar.detail}`))}
              />
            ))}
          </div>
        </div>
      ))}
      {chosen && (
        <p className="timeline-detail" data-testid="timeline-detail" role="status">
          {chosen}
        </p>
      )}
      <p className="timeline-legend" aria-hidden="true">
        <span className="timeline-bar timeline-model" /> model call <span className="timeline-bar timeline-tool" /> tool call{' '}
        <span className="timeline-bar timeline-wait" /> waiting for you
      </p>
    </div>
  );
}

/** Tokens and cost by purpose, as bars; nothing when the run's calls reported no usage. */
export function RunCostChart({ run }: { run: RunView }) {
  const spending = spendingByPurpose(run);
  if (spending.length === 0) return null;
  const most = Math.max(1, ...spending.map((entry) => entry.tokens));
  return (
    <table className="cost-chart" data-testid="cost-chart" aria-label="Tokens and cost by purpose">
      <tbody>
        {spending.map((entry) => (
          <tr key={entry.purpose} data-testid="cost-row">
            <th scope="row">{entry.purpose}</th>
            <td className="cost-bar-cell">
              <span className="cost-bar" style={{ width: `${(entry.tokens / most) * 100}%` }} />
            </td>
            <td>
              {entry.tokens.toLocaleString()} tokens · {entry.calls} call{entry.calls === 1 ? '' : 's'} ·{' '}
              {entry.costUsd === null ? 'cost unknown' : `$${entry.costUsd.toFixed(6).replace(/0+$/, '').replace(/\.$/, '')}`}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What a run did, in brief, for a comparison: its steps, tool calls, answer, cost and time. */
function summaryOf(run: RunView, answer: string | undefined) {
  const steps = [...run.steps, ...run.branches.flatMap((branch) => branch.steps)];
  const tools = steps.flatMap((step) => step.tools);
  const took = run.startedAt && run.endedAt ? Date.parse(run.endedAt) - Date.parse(run.startedAt) : undefined;
  return {
    steps: steps.map((step) => `Step ${step.step}: ${step.tools.map((tool) => tool.name).join(', ') || 'no tool'}`),
    tools: `${tools.length} call${tools.length === 1 ? '' : 's'}${tools.length ? ` (${[...new Set(tools.map((tool) => tool.name))].join(', ')})` : ''}`,
    answer: answer ?? '—',
    cost: run.spending
      ? `${(run.spending.promptTokens + run.spending.completionTokens).toLocaleString()} tokens${run.spending.costUsd === null ? '' : ` · $${run.spending.costUsd}`}`
      : '—',
    time: took === undefined ? '—' : seconds(took),
  };
}

/** Two branches side by side: the run before a rewind or rollback, and the one after. */
export function CompareRuns({ before, after, answers }: { before: RunView; after: RunView; answers: Record<string, string | undefined> }) {
  const a = summaryOf(before, answers[before.id]);
  const b = summaryOf(after, answers[after.id]);
  const rows: Array<[string, string | string[], string | string[]]> = [
    ['Steps', a.steps, b.steps],
    ['Tool calls', a.tools, b.tools],
    ['Answer', a.answer, b.answer],
    ['Cost', a.cost, b.cost],
    ['Time', a.time, b.time],
  ];
  const cell = (label: string, value: string | string[]) =>
    Array.isArray(value) ? (
      <ul>{value.length ? value.map((line, index) => <li key={index}>{line}</li>) : <li>—</li>}</ul>
    ) : label === 'Answer' ? (
      // The answers are Markdown, as the chat shows them.
      <Markdown text={value} />
    ) : (
      value
    );
  return (
    <table className="compare" data-testid="compare" aria-label="The branch before and after">
      <thead>
        <tr>
          <th scope="col" />
          <th scope="col">Before</th>
          <th scope="col">After</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([label, left, right]) => (
          <tr key={label}>
            <th scope="row">{label}</th>
            <td>{cell(label, left)}</td>
            <td>{cell(label, right)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
