import { nextTaskId, parseGraphYaml } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { isTaskId, parseTaskId, taskId } from '../../backend/src/agent/research/task-id.ts';

describe('research task ids', () => {
  it('are STAGE.N: built, read back and recognised in one place', () => {
    expect(taskId('1', 4)).toBe('1.4');
    expect(parseTaskId('1.4')).toEqual({ stage: '1', n: 4 });
    expect(parseTaskId('12.30')).toEqual({ stage: '12', n: 30 });
    expect(parseTaskId(taskId('3', 7))).toEqual({ stage: '3', n: 7 });
    for (const id of ['1.4', '0.0', '12.30']) expect(isTaskId(id)).toBe(true);
    for (const id of ['1', 'final', 'stage:1', '1.', '.4', '1.4.2', 'a.b', ' 1.4', '1.4 ', '']) {
      expect(isTaskId(id)).toBe(false);
      expect(parseTaskId(id)).toBeUndefined();
    }
  });

  it('number a stage’s follow-up after its highest task, and a task belongs to the stage its id names', () => {
    const graph = parseGraphYaml(`version: 1
stages:
  - id: "2"
    name: Gather
    tasks:
      - id: "2.1"
        title: One
        agent: verifier
      - id: "2.9"
        title: Nine
        agent: verifier
`);
    expect(nextTaskId(graph.stages[0]!)).toBe('2.10');
    expect(() =>
      parseGraphYaml(`version: 1
stages:
  - id: "2"
    name: Gather
    tasks:
      - id: "1.1"
        title: One
        agent: verifier
`),
    ).toThrow(/task "1\.1" is not in stage 2/);
  });
});
