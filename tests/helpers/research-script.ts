import type { RecordedRequest, ScriptedReply } from '../fixtures/scripted-llm-server.ts';

/**
 * A scripted model for a research run of one stage whose tasks (scouts, none depending on another)
 * run side by side: the plan, each task's result, the report and a PASS for every verdict come
 * from here; `task` answers each task's tool rounds.
 */
export function oneStageResearch(taskIds: string[], task: (request: RecordedRequest) => ScriptedReply): (request: RecordedRequest) => ScriptedReply {
  const plan = {
    stages: [
      {
        id: '1',
        name: 'Gather',
        verifier_criteria: [],
        tasks: taskIds.map((id) => ({ id, title: `Source ${id}`, agent: 'literature_scout', depends_on: [], acceptance_criteria: [], inputs: [] })),
      },
    ],
  };
  return (request) => {
    switch (request.purpose) {
      case 'research.plan':
        return { text: JSON.stringify(plan) };
      case 'research.task':
        return task(request);
      case 'research.task_result':
        return { text: JSON.stringify({ summary: `done ${request.node}`, result: `result ${request.node}`, evidence: [], artifacts: [] }) };
      case 'research.report':
        return { text: 'Report.' };
      default:
        return { text: JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] }) };
    }
  };
}
