import { streamingProse } from '@stepwise/shared-types';
import { toolInWords } from '../lib/tool-words.ts';
import type { RunView, StepView, ToolCallView } from './view-state.ts';

/**
 * The reason or observe text to show: the server's finished text, or while it streams (and after
 * a stop cut it short) the prose before any control block.
 */
export function phaseText(step: StepView, phase: 'reason' | 'observe'): string {
  return phase === 'reason' ? (step.reasonDone ? step.reason : streamingProse(step.reason)) : step.observeDone ? step.observe : streamingProse(step.observe);
}

/**
 * Whether a step shows folded (until the user opens or closes it): once a later step has begun
 * among its siblings (the run's steps, or its branch's), and every step of a finished run rebuilt
 * from the log.
 */
export function isStepFolded(run: RunView, step: StepView, siblings: StepView[] = run.steps): boolean {
  if (run.complete && run.replayed) return true;
  return siblings.some((other) => other.step > step.step);
}

const SUMMARY_LIMIT = 140;

/** One line that says what a step did: its tools and their results, or else what it concluded. */
export function stepSummary(step: StepView): string {
  const calls = step.tools.filter((tool) => tool.name !== 'request_input').map(describeCall);
  if (step.question) {
    const { text, answer, status } = step.question;
    calls.push(`asked “${oneLine(text)}”${answer !== undefined ? ` → “${oneLine(answer)}”` : status === 'pending' ? ' (waiting)' : ' (no answer)'}`);
  }
  const line = calls.length ? calls.join('; ') : firstSentence(phaseText(step, 'observe')) || firstSentence(phaseText(step, 'reason'));
  return shorten(line, SUMMARY_LIMIT);
}

function describeCall(tool: ToolCallView): string {
  const args = describeArguments(tool.arguments);
  const call = args ? `${toolInWords(tool.name)}: ${args}` : toolInWords(tool.name);
  switch (tool.status) {
    case 'running':
      return `${call} …`;
    case 'done':
      return `${call} → ${shorten(oneLine(typeof tool.result === 'string' ? tool.result : (JSON.stringify(tool.result) ?? '')), 60)}`;
    case 'error':
      return `${call} failed: ${shorten(oneLine(tool.error ?? ''), 60)}`;
    case 'stopped':
      return `${call} stopped`;
    default: {
      const unexpected: never = tool.status;
      return String(unexpected);
    }
  }
}

/** "6*7*2" for one string argument, "a=1, b="x"" for several, nothing for none. */
function describeArguments(args: Record<string, unknown>): string {
  const entries = Object.entries(args);
  if (entries.length === 0) return '';
  if (entries.length === 1 && typeof entries[0]![1] === 'string') return shorten(oneLine(entries[0]![1]), 40);
  return shorten(entries.map(([key, value]) => `${key}=${oneLine(JSON.stringify(value) ?? '')}`).join(', '), 40);
}

function firstSentence(text: string): string {
  const line = oneLine(text);
  const end = /[.!?](\s|$)/.exec(line);
  return end ? line.slice(0, end.index + 1) : line;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;
}
