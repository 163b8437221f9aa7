import { injectable } from 'tsyringe';
import type { LlmMessage } from '../../llm/llm-client.ts';
import { requestInputSchema } from '../../tools/request-input-tool.ts';
import { ObserveControl, parseControlBlock, ReasonControl } from '../control-block.ts';
import type { RunContext, RunInput, RunSuccess, Strategy } from '../strategy.ts';
import { runToolCalls, toolCallMessages } from '../tool-calls.ts';

/** What the loop does after a step's observe phase. */
type Next =
  | { kind: 'continue'; observation: string }
  | { kind: 'finish'; answer: string }
  | { kind: 'max_steps'; observation: string };

/** Stop conditions are small predicates, so the loop reads as the phases alone. */
const reachedMaxSteps = ({ step, maxSteps }: { step: number; maxSteps: number }) => step >= maxSteps;

/**
 * The strict reason → act → observe loop: every step runs all three phases in order. Reason and
 * observe are plain model calls; act offers the enabled tools plus `request_input`.
 */
@injectable()
export class RoaStrategy implements Strategy {
  readonly name = 'roa';

  async run(input: RunInput, context: RunContext): Promise<RunSuccess> {
    const { control, progress } = context;
    let lastObservation = '';
    let bestAnswer = '';
    for (let step = 1; ; step++) {
      progress.step = step;
      await context.sink.emit(context.events.turnStart(step));

      const reason = await this.reason(step, lastObservation, input, context);
      control.throwIfStopped();
      const toolSummaries = reason.finish ? [] : await this.act(step, reason.plan, input, context);
      control.throwIfStopped();
      const next = await this.observe(step, toolSummaries, input, context);

      switch (next.kind) {
        case 'finish':
          return { answer: next.answer, steps: step, reason: 'answered' };
        case 'max_steps':
          return { answer: next.observation || bestAnswer || noAnswer(input.maxSteps), steps: step, reason: 'max_steps' };
        case 'continue':
          lastObservation = next.observation;
          bestAnswer = next.observation || bestAnswer;
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
      files_manifest: input.filesManifest,
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
  private async act(step: number, plan: string, input: RunInput, context: RunContext): Promise<string[]> {
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
    const records = await runToolCalls(toolCalls, step, input, context);
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
