import { plannedTask } from '../fixtures/research-tasks.ts';
import type { RecordedRequest, ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import { gate } from './steer.ts';

type Responder = (request: RecordedRequest) => ScriptedReply;

/** A task of a research plan, as the planner answers it (of any agent). */
type PlannedTask = Omit<ReturnType<typeof plannedTask>, 'agent'> & { agent: string };

/** A stage of a research plan, as the planner answers it. */
export interface PlannedStage {
  id: string;
  name: string;
  verifier_criteria: string[];
  tasks: PlannedTask[];
}

/** A stage of the plan whose tasks are literature scouts titled `Task <id>`, none depending on another. */
export const plannedStage = (id: string, name: string, taskIds: string[]): PlannedStage => ({
  id,
  name,
  verifier_criteria: [],
  tasks: taskIds.map((taskId) => plannedTask(taskId)),
});

/** A verdict that passes, with nothing to follow up. */
export const PASS = JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] });

/** The parts of a scripted research model a test sets; what it leaves out answers as below. */
export interface ResearchScript {
  /** The plan's stages. */
  stages: PlannedStage[];
  /** Each task's rounds; by default `finding of <node>`. */
  task?: Responder;
  /** Each task's result; by default `done <node>` and `result <node>`, with no evidence or artifacts. */
  taskResult?: Responder;
  /** Each stage's verdict; by default a PASS. */
  stageVerifier?: Responder;
}

/**
 * A scripted model for a research run: the plan of `stages`, the tasks, their results and the
 * stage verdicts as the script says, the report `Report.` and a PASS for every other verdict.
 */
export function researchModel(script: ResearchScript): Responder {
  const plan = JSON.stringify({ stages: script.stages });
  return (request) => {
    switch (request.purpose) {
      case 'research.plan':
        return { text: plan };
      case 'research.task':
        return script.task?.(request) ?? { text: `finding of ${request.node}` };
      case 'research.task_result':
        return (
          script.taskResult?.(request) ?? {
            text: JSON.stringify({ summary: `done ${request.node}`, result: `result ${request.node}`, evidence: [], artifacts: [] }),
          }
        );
      case 'research.stage_verifier':
        return script.stageVerifier?.(request) ?? { text: PASS };
      case 'research.report':
        return { text: 'Report.' };
      default:
        return { text: PASS };
    }
  };
}

/**
 * A scripted model for a research run of one stage whose tasks (scouts, none depending on another)
 * run side by side: the plan, each task's result, the report and a PASS for every verdict come
 * from here; `task` answers each task's tool rounds.
 */
export function oneStageResearch(taskIds: string[], task: Responder): Responder {
  const stage = plannedStage('1', 'Gather', taskIds);
  return researchModel({ stages: [{ ...stage, tasks: stage.tasks.map((each) => ({ ...each, title: `Source ${each.id}` })) }], task });
}

/**
 * Three research tasks side by side, for stopping one: 1.1 and 1.3 find something once `siblings`
 * opens; 1.2 calls the calculator, then its second round hangs until it is stopped, and once
 * `runAgain` is called that round answers.
 */
export function taskToStop(): { model: Responder; siblings: ReturnType<typeof gate>; runAgain: () => void } {
  const siblings = gate();
  let again = false;
  const model = oneStageResearch(['1.1', '1.2', '1.3'], (request) => {
    if (request.node !== '1.2') return { text: `finding of ${request.node}`, after: siblings.promise };
    if (!request.body.messages.some((message) => message.role === 'tool'))
      return { toolCalls: [{ id: 'add', name: 'calculator', arguments: { expression: '2+2' } }] };
    return again ? { text: 'finding of 1.2: 4' } : { hang: true };
  });
  return {
    model,
    siblings,
    runAgain: () => {
      again = true;
    },
  };
}
