import type { DeltaEvent, LoggedEventBody } from '@stepwise/shared-types';
import type { z } from 'zod';
import type { LlmMessage, LlmToolCall, LlmToolSchema } from '../../messages.ts';
import type { PromptSamples } from '../../prompts/prompt-provider.ts';
import { parseControlBlock, proseDeltas } from './control-block.ts';
import { steerTurn } from '../kernel/steering.ts';
import type { Run } from '../kernel/strategy.ts';

/** One text phase of a step, as strategies make them. */
export interface PhaseSpec<P extends PromptSamples, K extends keyof P & string, C> {
  /** `STRATEGY.PURPOSE`, e.g. `roa.reason`. */
  purpose: string;
  /** The template in the strategy's prompts folder, and its variables. */
  template: K;
  variables: P[K];
  /** The call's messages around its rendered instructions. */
  messages: (system: string) => LlmMessage[];
  /** The control block the reply may end with; absent, the whole reply is prose. */
  control?: z.ZodType<C>;
  /** What a reply that is only a control block shows instead of prose. */
  fallback?: (control: C) => string | undefined;
  /** The preview of streamed text (reason/observe deltas); absent, nothing streams. */
  preview?: (delta: string) => DeltaEvent;
  /** The logged event with the phase's text; absent, nothing is logged. */
  event?: (content: string) => LoggedEventBody;
  tools?: LlmToolSchema[];
  /** The branch of the run this phase belongs to (X-Stepwise-Node). */
  nodeId?: string;
}

export interface PhaseResult<C> {
  /** The reply as the model sent it. */
  text: string;
  /** What a person reads: the prose without the control block (or its fallback). */
  content: string;
  control: C | null;
  toolCalls: LlmToolCall[];
  /** The reply was cut (at the model's output limit, or LLM_MAX_OUTPUT_CHARS): it ends in a note saying so, and is no finished answer. */
  cut: boolean;
}

/**
 * render → stream → parse the control block → emit → append: the sequence every text phase repeats.
 * The phase's text joins the run's transcript, so later calls see it.
 */
export async function runPhase<P extends PromptSamples, K extends keyof P & string, C extends Record<string, unknown>>(
  // biome-ignore lint/suspicious/noExplicitAny: a phase runs in a run of any strategy's options
  run: Run<any, P>,
  spec: PhaseSpec<P, K, C>,
): Promise<PhaseResult<C>> {
  const system = run.prompts.render(spec.template, spec.variables);
  const { text, toolCalls, truncated, steers } = await run.llm.complete({
    purpose: spec.purpose,
    messages: spec.messages(system),
    signal: run.control.signal,
    variables: spec.variables,
    ...(spec.tools ? { tools: spec.tools } : {}),
    ...(spec.nodeId ? { nodeId: spec.nodeId } : {}),
    ...(spec.preview ? { onDelta: previewOf(run, spec.preview, spec.control !== undefined) } : {}),
  });
  // A branch's messages (read by this call) join the transcript before its reply, so the branch's later calls read them too.
  if (spec.nodeId && steers?.length) run.progress.transcript.push(...steers.map(steerTurn));
  const { prose, control } = spec.control ? parseControlBlock(text, spec.control) : { prose: text.trim(), control: null };
  const content = prose || (control && spec.fallback?.(control)) || text.trim();
  if (spec.event) await run.sink.emit(spec.event(content));
  if (content && toolCalls.length === 0) run.progress.transcript.push({ role: 'assistant', content });
  return { text, content, control, toolCalls, cut: truncated === true };
}

/** Where a phase's streamed text goes: to the run's previews, prose only when the reply may end in a control block. */
// biome-ignore lint/suspicious/noExplicitAny: a phase runs in a run of any strategy's options
function previewOf(run: Run<any, any>, preview: (delta: string) => DeltaEvent, controlled: boolean): (delta: string) => void {
  const send = (delta: string) => run.sink.preview(preview(delta));
  return controlled ? proseDeltas(send) : send;
}
