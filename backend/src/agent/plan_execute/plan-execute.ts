import type { PlanTrigger } from '@stepwise/shared-types';
import { ModelError } from '../../errors.ts';
import { requestInputSchema } from '../../tools/request-input-tool.ts';
import { ReasonControl } from '../common/control-block.ts';
import type { PersonMessage } from '../common/person-messages.ts';
import { runPhase } from '../common/phase.ts';
import { defineStrategy, type RunSuccess } from '../kernel/strategy.ts';
import { conversation, Options, type PlanRun, prompts, recentObservations, type State } from './plan-run.ts';
import { runToolCalls, toolCallMessages } from '../kernel/tool-calls.ts';
import {
  MAX_REPLANS,
  namesMissingPrerequisite,
  PlanSchema,
  ReplanSchema,
  planStatus,
  planSteps,
  quoteStart,
  type StepState,
  StepObserveControl,
  VIABILITY_THRESHOLD,
  ViabilitySchema,
} from './plan.ts';
import { planExecuteDemo } from './plan-execute-demo.ts';
import { planEvent, planStepEvent, runMetadataEvent } from './plan-events.ts';
import { atStepLimit } from '../kernel/budgets.ts';

/**
 * Plan, then execute each step as guided reason → act → observe iterations, re-planning after a
 * step when it failed, when its observation names something missing, or when a viability check
 * says the plan no longer works; then one synthesis of everything the steps found.
 */
export const planExecute = defineStrategy({
  name: 'plan_execute',
  label: 'Plan and execute',
  description: 'Makes a plan of steps, carries out each with tools, re-plans when a step fails or finds something missing, then answers.',
  options: Options,
  prompts,
  demo: planExecuteDemo,
  async run(run: PlanRun): Promise<RunSuccess> {
    const { input, control, options } = run;
    const stamp = { run_id: input.runId };
    // Pre-flight: the session's files and its notepad go into the plan (an unreadable notepad is left out).
    const { plan: first, read } = await askPlan(run, [], 'plan_execute.plan', 'plan', {
      question: input.question,
      tool_names: input.toolNames,
      files_manifest: await run.filesManifest(),
      notepad: await run.notepad(),
    });
    const planned = planSteps(first, input.toolNames, 1);
    const state: State = { steps: planned.steps, revision: 1, replans: 0, iterations: 0, notes: [...planned.notes], heard: [...read] };
    for (const note of planned.notes) run.logger.warn({ note }, 'plan adjusted');
    await run.sink.emit(planEvent(stamp, state.revision, state.steps));

    let outOfBudget = false;
    for (let at = 0; at < state.steps.length; at++) {
      const step = state.steps[at]!;
      if (atStepLimit(state.iterations, input)) {
        outOfBudget = true;
        break;
      }
      control.throwIfStopped();
      const outcome = await stepAlone(run, state, step, options);
      switch (outcome.kind) {
        case 'done':
        case 'failed':
          if (at < state.steps.length - 1 && options.replan) await maybeReplan(run, state, step);
          break;
        case 'out_of_budget':
          // The run's iteration budget ran out inside the step: no re-plan, straight to the answer.
          outOfBudget = true;
          break;
        default: {
          const unexpected: never = outcome;
          throw new Error(`Unhandled step outcome ${JSON.stringify(unexpected)}`);
        }
      }
      if (outOfBudget) break;
    }

    control.throwIfStopped();
    const answer = await synthesize(run, state, outOfBudget);
    await run.sink.emit(runMetadataEvent(stamp, state.revision, state.steps));
    return { answer, steps: state.iterations, reason: outOfBudget ? 'max_steps' : 'answered' };
  },
});

/**
 * The plan or re-plan call, after the messages the person sent so far (`heard`); a reply that is no
 * plan fails the run quoting what the model said. `read`: the messages the call read besides.
 */
async function askPlan<K extends 'plan' | 'replan'>(
  run: PlanRun,
  heard: readonly PersonMessage[],
  purpose: string,
  template: K,
  variables: (typeof prompts)[K],
) {
  const system = run.prompts.render(template, variables);
  try {
    const result = await run.llm.complete({
      purpose,
      schema: { name: 'plan', zod: template === 'replan' ? ReplanSchema : PlanSchema },
      messages: conversation(system, run, heard, []),
      signal: run.control.signal,
      variables,
    });
    return { plan: result.parsed!, read: result.steers ?? [] };
  } catch (error) {
    if (!(error instanceof ModelError) || run.control.signal.aborted) throw error;
    // A reply cut at the output limit says so; otherwise the model's own words show what was wrong.
    const said = error.detail && !/output limit/.test(error.message) ? `: "${quoteStart(error.detail)}"` : ` (${error.message})`;
    throw new ModelError(`The model did not give a valid plan${said}`, { cause: error });
  }
}

/** How a plan step ended: its goal met, its attempts spent, or the run's iteration budget spent first. */
type StepOutcome = { kind: 'done' } | { kind: 'failed' } | { kind: 'out_of_budget' };

/**
 * A step a person may stop alone (agent_control stop with its node id): its model and tool calls
 * are cut, it ends failed with a stop receipt of its own, and the plan goes on after it.
 */
async function stepAlone(run: PlanRun, state: State, step: StepState, options: Options): Promise<StepOutcome> {
  const node = String(step.index);
  const branch = run.control.branch(node);
  const before = run.progress.stoppedCalls;
  try {
    return await executeStep({ ...run, control: branch }, state, step, options);
  } catch (error) {
    if (!branch.stopped || run.control.signal.aborted) throw error;
    const calls = (run.progress.stoppedCalls ?? []).slice(before?.length ?? 0);
    run.progress.stoppedCalls = before;
    step.status = 'failed';
    step.observation = 'Stopped by a person before it was done.';
    await run.sink.emit(run.events.node(node).nodeStopped(run.progress.step, calls, branch.stoppedBy));
    await run.sink.emit(planStepEvent({ run_id: run.input.runId }, step));
    return { kind: 'failed' };
  } finally {
    branch.end();
  }
}

/** One plan step: guided iterations until its observe says complete, or its attempts run out. */
async function executeStep(run: PlanRun, state: State, step: StepState, options: Options): Promise<StepOutcome> {
  const { input, control, sink } = run;
  const node = String(step.index);
  const events = run.events.node(node);
  const stamp = { run_id: input.runId };
  step.status = 'running';
  await sink.emit(planStepEvent(stamp, step));
  const transcriptStart = run.progress.transcript.length;
  const stepMessages = () => run.progress.transcript.slice(transcriptStart);
  // The step's primary tools first, then every other enabled tool.
  const toolOrder = [...step.tools.filter((tool) => input.toolNames.includes(tool)), ...input.toolNames.filter((tool) => !step.tools.includes(tool))];
  const used = new Set<string>();
  let complete = false;

  while (step.attempts < options.max_step_attempts && !atStepLimit(state.iterations, input)) {
    const iteration = ++state.iterations;
    step.attempts++;
    run.progress.step = iteration;
    await sink.emit(events.turnStart(iteration));
    const files = await run.filesManifest();
    const reason = await runPhase(run, {
      purpose: 'plan_execute.reason',
      nodeId: node,
      template: 'reason',
      variables: {
        question: input.question,
        goal: step.goal,
        success_criteria: step.successCriteria,
        context: step.context,
        plan_status: planStatus(state.steps),
        observations: recentObservations(state),
        tool_names: toolOrder,
        files_manifest: files,
        attempt: step.attempts,
        max_attempts: options.max_step_attempts,
      },
      messages: (system) => conversation(system, run, state.heard, stepMessages()),
      control: ReasonControl,
      fallback: (block) => block.plan,
      preview: (delta) => events.reasonDelta(iteration, delta),
      event: (text) => events.reason(iteration, text),
    });
    control.throwIfStopped();
    let summaries: string[] = [];
    if (reason.control?.finish !== true) {
      const act = await runPhase(run, {
        purpose: 'plan_execute.act',
        nodeId: node,
        template: 'act',
        variables: {
          question: input.question,
          goal: step.goal,
          context: step.context,
          plan: reason.control?.plan ?? reason.content,
          tool_names: toolOrder,
          files_manifest: files,
        },
        messages: (system) => conversation(system, run, state.heard, stepMessages()),
        tools: [...run.tools.schemas(toolOrder), requestInputSchema],
      });
      if (act.toolCalls.length) {
        const records = await runToolCalls(act.toolCalls, iteration, { ...run, events, nodeId: node });
        run.progress.transcript.push(...toolCallMessages(act.text, records));
        summaries = records.map((record) => record.summary);
        step.toolCalls += records.length;
        for (const record of records) used.add(record.call.name);
      }
    }
    control.throwIfStopped();
    const observe = await runPhase(run, {
      purpose: 'plan_execute.observe',
      nodeId: node,
      template: 'observe',
      variables: {
        question: input.question,
        goal: step.goal,
        success_criteria: step.successCriteria,
        context: step.context,
        tool_summaries: summaries.join('\n'),
        attempt: step.attempts,
        max_attempts: options.max_step_attempts,
      },
      messages: (system) => conversation(system, run, state.heard, stepMessages()),
      control: StepObserveControl,
      fallback: (block) => block.observation,
      preview: (delta) => events.observeDelta(iteration, delta),
      event: (text) => events.observe(iteration, text),
    });
    step.observation = observe.control?.observation?.trim() || observe.content;
    if (observe.control?.step_complete === true) {
      complete = true;
      break;
    }
  }
  step.toolsUsed = [...used];
  step.status = complete ? 'done' : 'failed';
  await sink.emit(planStepEvent(stamp, step));
  if (complete) return { kind: 'done' };
  return step.attempts < options.max_step_attempts ? { kind: 'out_of_budget' } : { kind: 'failed' };
}

/** After a step (not the last): re-plan when a trigger fires and the budget allows. */
async function maybeReplan(run: PlanRun, state: State, step: StepState): Promise<void> {
  const { input } = run;
  let trigger: PlanTrigger | undefined;
  let reason = step.observation;
  // The messages that led to the re-plan: those the viability check read, then those the re-plan read.
  const messages: PersonMessage[] = [];
  if (step.status === 'failed') trigger = 'failed_attempts';
  else if (namesMissingPrerequisite(step.observation)) trigger = 'missing_prerequisite';
  else if (state.replans < MAX_REPLANS) {
    run.control.throwIfStopped();
    const variables = { question: input.question, plan_status: planStatus(state.steps), observation: step.observation };
    const { parsed, steers = [] } = await run.llm.complete({
      purpose: 'plan_execute.viability',
      schema: { name: 'plan_viability', zod: ViabilitySchema },
      messages: conversation(run.prompts.render('viability', variables), run, state.heard, []),
      signal: run.control.signal,
      variables,
    });
    state.heard.push(...steers);
    if (parsed && !parsed.viable && parsed.confidence >= VIABILITY_THRESHOLD) {
      // A plan the person's message made unfit is re-planned for that message.
      trigger = steers.length > 0 ? 'message' : 'not_viable';
      reason = parsed.reason;
      messages.push(...steers);
    }
  }
  if (!trigger) return;
  if (state.replans >= MAX_REPLANS) {
    const note = `The plan was not revised after step ${step.index} (${trigger}): the run had used its ${MAX_REPLANS} re-plans, so it went on with the plan it had.`;
    if (!state.notes.includes(note)) state.notes.push(note);
    run.logger.warn({ trigger, step: step.index }, 're-plan budget spent');
    return;
  }
  run.control.throwIfStopped();
  const kept = state.steps.filter((each) => each.status === 'done' || each.status === 'failed');
  const { plan: reply, read } = await askPlan(run, state.heard, 'plan_execute.replan', 'replan', {
    question: input.question,
    tool_names: input.toolNames,
    files_manifest: await run.filesManifest(),
    notepad: await run.notepad(),
    plan_status: planStatus(state.steps),
    observations: recentObservations(state),
    trigger,
    reason,
    messages: messages.map((message) => message.content).join('\n\n'),
  });
  state.heard.push(...read);
  messages.push(...read);
  const fresh = planSteps(reply, input.toolNames, kept.length + 1, { replan: true });
  // Completed steps stay; everything after them is the new plan's, numbered on from them.
  for (const [at, each] of kept.entries()) each.index = at + 1;
  state.steps = [...kept, ...fresh.steps];
  state.notes.push(...fresh.notes);
  state.replans++;
  state.revision++;
  await run.sink.emit(
    planEvent(
      { run_id: input.runId },
      state.revision,
      state.steps,
      trigger,
      messages.map((message) => message.id),
    ),
  );
}

/** The answer, from every step's goal, status, tools and observation. */
async function synthesize(run: PlanRun, state: State, outOfBudget: boolean): Promise<string> {
  const { input } = run;
  const notes = [...state.notes];
  if (outOfBudget) notes.push(`The run reached its limit of ${input.maxSteps} iterations before finishing the plan.`);
  const stepsReport = state.steps
    .map(
      (step) =>
        `${step.index}. ${step.goal} — ${step.status}${step.toolsUsed.length ? ` (tools: ${step.toolsUsed.join(', ')})` : ''}${step.observation ? `: ${step.observation}` : ''}`,
    )
    .join('\n');
  const variables = {
    question: input.question,
    steps_report: stepsReport,
    notes: notes.join('\n'),
    steps: state.steps.map((step) => ({ index: step.index, goal: step.goal, status: step.status, observation: step.observation })),
  };
  const { text } = await run.llm.complete({
    purpose: 'plan_execute.synthesis',
    messages: conversation(run.prompts.render('synthesis', variables), run, state.heard, []),
    signal: run.control.signal,
    variables,
  });
  return text.trim() || stepsReport || 'The plan had no steps and the model gave no answer.';
}
