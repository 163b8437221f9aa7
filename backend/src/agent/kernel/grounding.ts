import type { CompletionReason } from '@stepwise/shared-types';
import type { EventSink } from './event-sink.ts';
import type { RunSuccess } from './strategy.ts';

/**
 * The marker an answer starts with when it could not do what was asked: `[UNRESOLVED] One
 * sentence saying what could not be done.` on its first line, then whatever the answer has to
 * say. The kernel reads and removes it; the prompts of every strategy ask a real model for it.
 */
export const UNRESOLVED_MARKER = '[UNRESOLVED]';

/** A tool call of the run that failed: its tool, and the error its result says. */
export interface FailedCall {
  tool: string;
  error: string;
}

/** The endings that claim success: only these are checked against what the tools returned. */
const SUCCESS_REASONS: ReadonlySet<CompletionReason> = new Set(['answered', 'workflow_complete', 'natural_stop']);

/** The marker's answer: the sentence on the marker's line as the summary, the rest as the answer shown. */
export function unresolvedAnswer(summary: string, body = ''): string {
  return `${UNRESOLVED_MARKER} ${summary}${body ? `\n\n${body}` : ''}`;
}

/**
 * A run's ending, grounded in what its tools returned: an answer marked unresolved, or one that
 * quotes the error of a tool call that failed (its answer rests on that failure), ends
 * `unresolved` with a one-sentence summary, never as a success. Other endings are kept as they are
 * (a marker is removed from the answer whatever the ending).
 */
/** What the model wire writes at the end of text cut at the model's output limit (llm/openai-llm-client.ts). */
export const CUT_AT_LIMIT_NOTE = "[The reply was cut at the model's output limit]";

export function groundedEnding(success: RunSuccess, failures: readonly FailedCall[]): RunSuccess {
  const marked = readMarker(success.answer);
  if (marked) {
    if (!SUCCESS_REASONS.has(success.reason)) return { ...success, answer: marked.answer };
    return { ...success, answer: marked.answer, reason: 'unresolved', summary: marked.summary };
  }
  if (!SUCCESS_REASONS.has(success.reason)) return success;
  // An answer the model's output limit cut (the wire marks it) is no whole answer, in any strategy.
  if (success.answer.includes(CUT_AT_LIMIT_NOTE)) {
    return { ...success, reason: 'unresolved', summary: "The answer was cut at the model's output limit before it was complete." };
  }
  const quoted = failures.find((failure) => quotes(success.answer, failure.error));
  if (!quoted) return success;
  return { ...success, reason: 'unresolved', summary: oneSentence(`The answer rests on a failed ${spoken(quoted.tool)} call: ${quoted.error}`) };
}

/** A sink that tells `onFailure` of every `tool_error` the run emits (a failed call, a denied approval; replayed ones too). */
export function watchedSink(sink: EventSink, onFailure: (failure: FailedCall) => void): EventSink {
  return {
    emit(event) {
      if (event.type === 'tool_error') onFailure({ tool: event.tool_name, error: event.error });
      return sink.emit(event);
    },
    flush: () => sink.flush(),
    preview: (delta) => sink.preview(delta),
    progress: (event) => sink.progress(event),
  };
}

/** A tool's name in words: `todo_operations` is "todo operations", an MCP tool's server prefix dropped. */
export function spoken(tool: string): string {
  const short = tool.includes('__') ? tool.slice(tool.indexOf('__') + 2) : tool;
  return short.replace(/[_-]+/g, ' ');
}

/** An answer as a person reads it: an unresolved marker becomes the words "Could not answer:". */
export function shownAnswer(answer: string): string {
  return readMarker(answer)?.answer ?? answer;
}

function readMarker(answer: string): { summary: string; answer: string } | undefined {
  const trimmed = answer.trimStart();
  if (!trimmed.startsWith(UNRESOLVED_MARKER)) return undefined;
  const rest = trimmed.slice(UNRESOLVED_MARKER.length).replace(/^[\s:]+/, '');
  const newline = rest.indexOf('\n');
  const line = (newline < 0 ? rest : rest.slice(0, newline)).trim();
  const body = newline < 0 ? '' : rest.slice(newline + 1).trim();
  const summary = oneSentence(line || 'The request could not be done.');
  return { summary, answer: body ? `**Could not answer:** ${line}\n\n${body}` : `**Could not answer:** ${line || summary}` };
}

/** True when the answer quotes the error: its first words (at least a short phrase) appear in it. */
function quotes(answer: string, error: string): boolean {
  const phrase = error
    .replace(/^Error:\s*/, '')
    .trim()
    .slice(0, 40)
    .trim();
  return phrase.length >= 8 && answer.toLowerCase().includes(phrase.toLowerCase());
}

/** The first sentence of a text, on one line, ending with its stop. */
export function oneSentence(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const first = /^.+?[.!?](?=\s|$)/.exec(line)?.[0] ?? line;
  const capped = first.length > 240 ? `${first.slice(0, 239)}…` : first;
  return /[.!?…]$/.test(capped) ? capped : `${capped}.`;
}
