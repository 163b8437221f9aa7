import { injectable } from 'tsyringe';
import type { LlmMessage, LlmToolCall } from '../../llm/llm-client.ts';
import { requestInputSchema } from '../../tools/request-input-tool.ts';
import { ObserveControl, parseControlBlock, ReasonControl } from '../control-block.ts';
import type { RunContext, RunInput, RunSuccess, Strategy } from '../strategy.ts';
import { runToolCalls, type ToolCallsProgress, toolCallMessages } from '../tool-calls.ts';

/** What the loop does after a step's observe phase. */
type Next =
  | { kind: 'continue'; observation: string }
  | { kind: 'finish'; answer: string }
  | { kind: 'max_steps'; observation: string };

/** What carries over from one step to the next. */
interface LoopState {
  lastObservation: string;
  bestAnswer: string;
}

/** Saved while the act phase waits for the user's answer: enough to go on after a restart. */
export interface RoaCheckpoint {
  version: 1;
  step: number;
  loop: LoopState;
  transcript: LlmMessage[];
  act: { text: string; calls: LlmToolCall[]; progress: ToolCallsProgress };
}

/** Stop conditions are small predicates, so the loop reads as the phases alone. */
const reachedMaxSteps = ({ step, maxSteps }: { step: number; maxSteps: number }) => step >= maxSteps;

/**
 * The strict reason → act → observe loop: every step runs all three phases in order. Reason and
 * observe are plain model calls; act offers the enabled tools plus `request_input`.
 */
@injectable()
export class RoaStrategy implements Strategy {
  readonly name = 'roa';

  async run(input: RunInput, context: RunContext, resume?: unknown): Promise<RunSuccess> {
    const { control, progress } = context;
    const saved = isCheckpoint(resume) ? resume : undefined;
    const loop: LoopState = saved ? { ...saved.loop } : { lastObservation: '', bestAnswer: '' };
    if (saved) progress.transcript.push(...saved.transcript);

    for (let step = saved?.step ?? 1; ; step++) {
      progress.step = step;
      let toolSummaries: string[];
      if (saved && step === saved.step) {
        // Resumed in the middle of this step's act phase: reason and the act call already ran.
        toolSummaries = await this.runCalls(step, saved.act.text, saved.act.calls, saved.act.progress, loop, input, context);
      } else {
        await context.sink.emit(context.events.turnStart(step));
        const reason = await this.reason(step, loop.lastObservation, input, context);
        control.throwIfStopped();
        toolSummaries = reason.finish ? [] : await this.act(step, reason.plan, loop, input, context);
      }
      control.throwIfStopped();
      const next = await this.observe(step, toolSummaries, input, context);

      switch (next.kind) {
        case 'finish':
          return { answer: next.answer, steps: step, reason: 'answered' };
        case 'max_steps':
          return { answer: next.observation || loop.bestAnswer || noAnswer(input.maxSteps), steps: step, reason: 'max_steps' };
        case 'continue':
          loop.lastObservation = next.observation;
          loop.bestAnswer = next.observation || loop.bestAnswer;
          break;
        default: {
          const unexpected: never = next;
          throw new Error(`Unhandled next step ${JSON.stringify(unexpected)}`);
        }
      }
    }
  }

  /** Reason: plan the step. A `finish: true` block means act makes no model call. */
  private async reason(step: number, lastObservation: string, input: RunInput, context: RunContext) {
    const system = context.prompts.render('reason', {
      question: input.question,
      files_manifest: await context.filesManifest(),
      last_observation: lastObservation,
      step,
      max_steps: input.maxSteps,
      tool_names: input.toolNames,
    });
    const { text } = await context.llm.complete({
      purpose: 'reason',
      messages: conversation(system, input, context),
      signal: context.control.signal,
      onDelta: (delta) => context.sink.preview(context.events.reasonDelta(step, delta)),
    });
    const { prose, control } = parseControlBlock(text, ReasonControl);
    const content = prose || control?.plan || text.trim();
    await context.sink.emit(context.events.reason(step, content));
    context.progress.transcript.push({ role: 'assistant', content });
    return { plan: control?.plan ?? prose, finish: control?.finish === true };
  }

  /** Act: one model call with the tools; run what it asks for. Returns a summary line per call. */
  private async act(step: number, plan: string, loop: LoopState, input: RunInput, context: RunContext): Promise<string[]> {
    const system = context.prompts.render('act', {
      question: input.question,
      plan,
      step,
      max_steps: input.maxSteps,
      tool_names: input.toolNames,
    });
    const { text, toolCalls } = await context.llm.complete({
      purpose: 'act',
      messages: conversation(system, input, context),
      tools: [...context.tools.schemas(input.toolNames), requestInputSchema],
      signal: context.control.signal,
    });
    if (toolCalls.length === 0) {
      if (text.trim()) context.progress.transcript.push({ role: 'assistant', content: text.trim() });
      return [];
    }
    return this.runCalls(step, text, toolCalls, { done: {} }, loop, input, context);
  }

  /** Runs (or resumes) an act phase's tool calls, saving a checkpoint while a question waits. */
  private async runCalls(
    step: number,
    text: string,
    calls: LlmToolCall[],
    progress: ToolCallsProgress,
    loop: LoopState,
    input: RunInput,
    context: RunContext,
  ): Promise<string[]> {
    const transcript = [...context.progress.transcript];
    const records = await runToolCalls(calls, step, input, context, progress, {
      onAwaitInput: (current) =>
        context.checkpoints.save({ version: 1, step, loop, transcript, act: { text, calls, progress: current } } satisfies RoaCheckpoint),
      onAnswered: () => context.checkpoints.clear(),
    });
    // The call and its results join the transcript together, so it never holds a call without a result.
    context.progress.transcript.push(...toolCallMessages(text, records));
    return records.map((record) => record.summary);
  }

  /** Observe: judge the step's results and decide whether to go on. */
  private async observe(step: number, toolSummaries: string[], input: RunInput, context: RunContext): Promise<Next> {
    const isLastStep = reachedMaxSteps({ step, maxSteps: input.maxSteps });
    const system = context.prompts.render('observe', {
      question: input.question,
      tool_summaries: toolSummaries.join('\n'),
      tool_names: input.toolNames,
      step,
      max_steps: input.maxSteps,
      is_last_step: isLastStep,
    });
    const { text } = await context.llm.complete({
      purpose: 'observe',
      messages: conversation(system, input, context),
      signal: context.control.signal,
      onDelta: (delta) => context.sink.preview(context.events.observeDelta(step, delta)),
    });
    const { prose, control } = parseControlBlock(text, ObserveControl);
    const content = prose || control?.observation || text.trim();
    await context.sink.emit(context.events.observe(step, content));
    context.progress.transcript.push({ role: 'assistant', content });

    const finalAnswer = control?.final_answer?.trim();
    if (finalAnswer) return { kind: 'finish', answer: finalAnswer };
    const observation = control?.observation?.trim() || prose || text.trim();
    if (control?.should_continue === false) return { kind: 'finish', answer: observation };
    if (isLastStep) return { kind: 'max_steps', observation };
    return { kind: 'continue', observation };
  }
}

/** The messages of one phase's call: its instructions, the session so far, the question, the run so far. */
function conversation(system: string, input: RunInput, context: RunContext): LlmMessage[] {
  return [
    { role: 'system', content: system },
    ...input.history,
    { role: 'user', content: input.question },
    ...context.progress.transcript,
  ];
}

function noAnswer(maxSteps: number): string {
  return `I could not reach an answer within ${maxSteps} step${maxSteps === 1 ? '' : 's'}.`;
}

function isCheckpoint(value: unknown): value is RoaCheckpoint {
  return typeof value === 'object' && value !== null && (value as RoaCheckpoint).version === 1 && 'act' in value;
}
