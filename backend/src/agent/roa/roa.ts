import { z } from 'zod';
import type { LlmMessage } from '../../messages.ts';
import { requestInputSchema } from '../../tools/request-input-tool.ts';
import { ObserveControl, ReasonControl } from '../common/control-block.ts';
import { runPhase } from '../common/phase.ts';
import { defineStrategy, questionTurn, type Run, type RunSuccess } from '../kernel/strategy.ts';
import { runToolCalls, toolCallMessages } from '../kernel/tool-calls.ts';
import { roaDemo } from './roa-demo.ts';
import { atStepLimit } from '../kernel/budgets.ts';

/** The templates in prompts/roa/, each with an example of its variables. */
const prompts = {
  reason: { question: 'q', files_manifest: '', last_observation: '', step: 1, max_steps: 2, tool_names: ['calculator'] },
  act: { question: 'q', plan: '', files_manifest: '', step: 1, max_steps: 2, tool_names: ['calculator'] },
  observe: { question: 'q', tool_summaries: '', tool_names: ['calculator'], step: 1, max_steps: 2, is_last_step: false },
  final: { question: 'q', last_observation: '', max_steps: 2, tool_names: ['calculator'] },
};

type RoaRun = Run<Record<string, never>, typeof prompts>;

/** What the loop does after a step's observe phase. */
type Next = { kind: 'continue'; observation: string } | { kind: 'finish'; answer: string } | { kind: 'max_steps'; observation: string };

/** What carries over from one step to the next. */
interface LoopState {
  lastObservation: string;
  bestAnswer: string;
}

/**
 * The strict reason → act → observe loop: every step runs all three phases in order. Reason and
 * observe are plain model calls; act offers the enabled tools plus `request_input`. At the step
 * limit, one last call gives the best answer from what was found. Nothing here is about restarts:
 * the kernel's journal replays the run's past (a question that waited, a stopped run continued).
 */
export const roa = defineStrategy({
  name: 'roa',
  label: 'Reason, act, observe',
  description: 'Every step plans, calls tools, then judges the results, until the answer is found.',
  options: z.object({}).strict(),
  prompts,
  demo: roaDemo,
  async run(run: RoaRun): Promise<RunSuccess> {
    const { control, progress, input } = run;
    const loop: LoopState = { lastObservation: '', bestAnswer: '' };

    for (let step = 1; ; step++) {
      progress.step = step;
      await run.sink.emit(run.events.turnStart(step));
      const reason = await reasonPhase(run, step, loop.lastObservation);
      control.throwIfStopped();
      const toolSummaries = reason.finish ? [] : await actPhase(run, step, reason.plan);
      control.throwIfStopped();
      const next = await observePhase(run, step, toolSummaries);

      switch (next.kind) {
        case 'finish':
          return { answer: next.answer, steps: step, reason: 'answered' };
        case 'max_steps': {
          control.throwIfStopped();
          const answer = await finalAnswer(run, next.observation || loop.bestAnswer);
          return { answer: answer || next.observation || loop.bestAnswer || noAnswer(input.maxSteps), steps: step, reason: 'max_steps' };
        }
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
  },
});

/** Reason: plan the step. A `finish: true` block means act makes no model call. */
async function reasonPhase(run: RoaRun, step: number, lastObservation: string) {
  const { input } = run;
  const { content, control } = await runPhase(run, {
    purpose: 'roa.reason',
    template: 'reason',
    variables: {
      question: input.question,
      files_manifest: await run.filesManifest(),
      last_observation: lastObservation,
      step,
      max_steps: input.maxSteps,
      tool_names: input.toolNames,
    },
    messages: (system) => conversation(system, run),
    control: ReasonControl,
    fallback: (block) => block.plan,
    preview: (delta) => run.events.reasonDelta(step, delta),
    event: (text) => run.events.reason(step, text),
  });
  return { plan: control?.plan ?? content, finish: control?.finish === true };
}

/** Act: one model call with the tools; run what it asks for. Returns a summary line per call. */
async function actPhase(run: RoaRun, step: number, plan: string): Promise<string[]> {
  const { input } = run;
  const { text, toolCalls } = await runPhase(run, {
    purpose: 'roa.act',
    template: 'act',
    variables: {
      question: input.question,
      plan,
      files_manifest: await run.filesManifest(),
      step,
      max_steps: input.maxSteps,
      tool_names: input.toolNames,
    },
    messages: (system) => conversation(system, run),
    tools: [...run.tools.schemas(input.toolNames), requestInputSchema],
  });
  if (toolCalls.length === 0) return [];
  const records = await runToolCalls(toolCalls, step, run);
  // The call and its results join the transcript together, so it never holds a call without a result.
  run.progress.transcript.push(...toolCallMessages(text, records));
  return records.map((record) => record.summary);
}

/** Observe: judge the step's results and decide whether to go on. */
async function observePhase(run: RoaRun, step: number, toolSummaries: string[]): Promise<Next> {
  const { input } = run;
  const isLastStep = atStepLimit(step, input);
  const { text, content, control, cut } = await runPhase(run, {
    purpose: 'roa.observe',
    template: 'observe',
    variables: {
      question: input.question,
      tool_summaries: toolSummaries.join('\n'),
      tool_names: input.toolNames,
      step,
      max_steps: input.maxSteps,
      is_last_step: isLastStep,
    },
    messages: (system) => conversation(system, run),
    control: ObserveControl,
    fallback: (block) => block.observation,
    preview: (delta) => run.events.observeDelta(step, delta),
    event: (body) => run.events.observe(step, body),
  });
  const observation = control?.observation?.trim() || content || text.trim();
  // A reply cut at the output limit is no finished answer, whatever its control block said.
  const finalAnswer = cut ? undefined : control?.final_answer?.trim();
  if (finalAnswer) return { kind: 'finish', answer: finalAnswer };
  if (control?.should_continue === false && !cut) return { kind: 'finish', answer: observation };
  if (isLastStep) return { kind: 'max_steps', observation };
  return { kind: 'continue', observation };
}

/**
 * At the step limit: one last call for the best answer from what the steps found, or a plain word
 * on what is missing, so the run never ends on an internal note. Its text is the answer.
 */
async function finalAnswer(run: RoaRun, lastObservation: string): Promise<string> {
  const { input } = run;
  const system = run.prompts.render('final', {
    question: input.question,
    last_observation: lastObservation,
    max_steps: input.maxSteps,
    tool_names: input.toolNames,
  });
  const { text } = await run.llm.complete({
    purpose: 'roa.final',
    messages: conversation(system, run),
    signal: run.control.signal,
    variables: { question: input.question, last_observation: lastObservation, tool_names: input.toolNames },
  });
  return text.trim();
}

/** The messages of one phase's call: its instructions, the session so far, the question, the run so far. */
function conversation(system: string, run: RoaRun): LlmMessage[] {
  return [{ role: 'system', content: system }, ...run.input.history, questionTurn(run), ...run.progress.transcript];
}

function noAnswer(maxSteps: number): string {
  return `I could not reach an answer within ${maxSteps} step${maxSteps === 1 ? '' : 's'}.`;
}
