import { JournalReplay, type JournalEntry, type RunJournal } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

/** A journal in memory, for one run. */
function memoryJournal(entries: JournalEntry[]): RunJournal & { entries: JournalEntry[] } {
  const journal = {
    entries: [...entries],
    read: async () => [...journal.entries],
    append: async (_runId: string, entry: JournalEntry) => void journal.entries.push(entry),
    truncate: async (_runId: string, from: number) => {
      journal.entries = journal.entries.filter((entry) => entry.position < from);
    },
  };
  return journal;
}

const entry = (position: number, kind: string, key: string, value: unknown): JournalEntry => ({ position, kind, key, value });

describe('replaying a journal whose branches ran side by side', () => {
  const past = [
    entry(1, 'model', 'research.task@1.1', 'asks which tower'),
    entry(2, 'model', 'research.task@1.2', 'finding of 1.2'),
    entry(3, 'question', 'call_1', { id: 'q_1' }),
    entry(4, 'model', 'research.task_result@1.2', 'result of 1.2'),
  ];

  it('a call one branch never finished is made again; the other branches’ past (and effects keyed by a call id) still replay', async () => {
    const journal = memoryJournal([entry(0, 'input', 'input', {}), ...past]);
    const replay = new JournalReplay(journal, 'run', { runId: 'run', entries: past, events: [] });
    const live = (value: string) => async () => value;
    expect(await replay.once('model', 'research.task@1.2', live('new'))).toEqual({ value: 'finding of 1.2', replayed: true });
    // Branch 1.2's second call was done; a third one never finished: it is made now...
    expect(await replay.once('model', 'research.task_result@1.2', live('new'))).toEqual({ value: 'result of 1.2', replayed: true });
    expect(await replay.once('model', 'research.verify@1.2', live('made now'))).toEqual({ value: 'made now', replayed: false });
    // ...and branch 1.1's call and question come back as they were.
    expect(await replay.once('model', 'research.task@1.1', live('new'))).toEqual({ value: 'asks which tower', replayed: true });
    expect(await replay.once('question', 'call_1', async () => ({ id: 'q_fresh' }))).toEqual({ value: { id: 'q_1' }, replayed: true });
    expect(journal.entries.map((one) => one.key)).toEqual([
      'input',
      'research.task@1.1',
      'research.task@1.2',
      'call_1',
      'research.task_result@1.2',
      'research.verify@1.2',
    ]);
  });

  it('a miss in a branch drops that branch’s later past; a miss outside any branch drops the whole rest', async () => {
    const journal = memoryJournal([entry(0, 'input', 'input', {}), ...past]);
    const replay = new JournalReplay(journal, 'run', { runId: 'run', entries: past, events: [] });
    // Branch 1.2 went another way at its first call: its result is not replayed, 1.1's past stays.
    expect(await replay.once('model', 'research.other@1.2', async () => 'other')).toMatchObject({ replayed: false });
    expect(replay.has('model', 'research.task_result@1.2')).toBe(false);
    expect(replay.has('model', 'research.task@1.1')).toBe(true);
    expect(journal.entries.map((one) => one.position)).toEqual([0, 1, 3, 5]);
    // The run's own sequence went another way: nothing of the past is left.
    expect(await replay.once('model', 'research.stage_verifier', async () => 'verdict')).toMatchObject({ replayed: false });
    expect(replay.replaying).toBe(false);
    expect(journal.entries.map((one) => one.key)).toEqual(['input', 'research.other@1.2', 'research.stage_verifier']);
  });

  it('a sequence call outside any branch (a final synthesis) does not outlive a branch that went another way', async () => {
    const steps = [entry(1, 'model', 'plan_execute.step@1', 'step 1'), entry(2, 'model', 'plan_execute.synthesis', 'the old answer')];
    const journal = memoryJournal([entry(0, 'input', 'input', {}), ...steps]);
    const replay = new JournalReplay(journal, 'run', { runId: 'run', entries: steps, events: [] });
    expect(await replay.once('model', 'plan_execute.step@1', async () => 'new')).toMatchObject({ replayed: true });
    // Continued with more steps: step 2 is new, so the old synthesis is no answer any more.
    expect(await replay.once('model', 'plan_execute.step@2', async () => 'step 2')).toMatchObject({ replayed: false });
    expect(await replay.once('model', 'plan_execute.synthesis', async () => 'the new answer')).toEqual({ value: 'the new answer', replayed: false });
    expect(journal.entries.map((one) => one.value)).toEqual([{}, 'step 1', 'step 2', 'the new answer']);
  });

  it('a question still waiting for its answer does not end the replay of the tasks beside it', async () => {
    const side = [
      entry(1, 'question', 'call_1', { id: 'q_1' }),
      entry(2, 'model', 'research.task@1.2', 'finding of 1.2'),
      entry(3, 'model', 'research.task_result@1.2', 'result of 1.2'),
    ];
    const journal = memoryJournal([entry(0, 'input', 'input', {}), ...side]);
    const replay = new JournalReplay(journal, 'run', { runId: 'run', entries: side, events: [] });
    expect(await replay.once('question', 'call_1', async () => ({ id: 'q_fresh' }))).toEqual({ value: { id: 'q_1' }, replayed: true });
    // Task 1.1 waits for its answer (none was recorded) while task 1.2 replays what it had done.
    const answer = replay.once('answer', 'call_1', async () => 'The Eiffel Tower');
    expect(await replay.once('model', 'research.task@1.2', async () => 'again')).toEqual({ value: 'finding of 1.2', replayed: true });
    expect(await replay.once('model', 'research.task_result@1.2', async () => 'again')).toEqual({ value: 'result of 1.2', replayed: true });
    expect(await answer).toEqual({ value: 'The Eiffel Tower', replayed: false });
    expect(journal.entries.map((one) => one.position)).toEqual([0, 1, 2, 3, 4]);
  });

  it('two branches going another way at once drop each its own past, and neither writes back what the other dropped', async () => {
    const side = [
      entry(1, 'model', 'r.task@1.1', 'a'),
      entry(2, 'model', 'r.task@1.2', 'b'),
      entry(3, 'model', 'r.more@1.1', 'c'),
      entry(4, 'model', 'r.more@1.2', 'd'),
    ];
    const journal = memoryJournal([entry(0, 'input', 'input', {}), ...side]);
    const replay = new JournalReplay(journal, 'run', { runId: 'run', entries: side, events: [] });
    expect(await replay.once('model', 'r.task@1.1', async () => 'new')).toMatchObject({ replayed: true });
    expect(await replay.once('model', 'r.task@1.2', async () => 'new')).toMatchObject({ replayed: true });
    const [one, two] = await Promise.all([replay.once('model', 'r.other@1.1', async () => 'x'), replay.once('model', 'r.other@1.2', async () => 'y')]);
    expect([one.replayed, two.replayed]).toEqual([false, false]);
    expect(replay.replaying).toBe(false);
    expect(journal.entries.map((one) => one.value).sort()).toEqual(['a', 'b', 'x', 'y', {}].sort());
  });
});
