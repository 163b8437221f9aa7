// A run's history, read from the end of its session only as far as the context budget needs.
import { type LlmMessage, latestHistory, MemoryStore, trimToBudget } from '@stepwise/backend';
import { describe, expect, it, vi } from 'vitest';

/** A session of `turns` turns: a question, a few tool calls and their results, an answer. */
function turnsOf(turns: number, random: (below: number) => number): LlmMessage[] {
  const messages: LlmMessage[] = [];
  for (let turn = 0; turn < turns; turn++) {
    messages.push({ role: 'user', content: `question ${turn} ${'?'.repeat(random(200))}` });
    for (let call = random(4); call > 0; call--) {
      const id = `c${turn}-${call}`;
      messages.push({ role: 'assistant', content: null, toolCalls: [{ id, name: 'calculator', arguments: `{"expression":"${'1+'.repeat(random(50))}1"}` }] });
      messages.push({ role: 'tool', toolCallId: id, content: 'x'.repeat(random(300)) });
    }
    if (random(4) > 0) messages.push({ role: 'assistant', content: `answer ${turn} ${'!'.repeat(random(400))}` });
  }
  return messages;
}

/** What a run saw when it read the whole session: the history before the last question trimmed, and what came after it. */
function wholeRead(messages: LlmMessage[], budget: number, beforeLastQuestion: boolean) {
  if (!beforeLastQuestion) return { history: trimToBudget(messages, budget), after: [] };
  const asked = messages.findLastIndex((message) => message.role === 'user');
  return { history: trimToBudget(messages.slice(0, Math.max(0, asked)), budget), after: asked < 0 ? [] : messages.slice(asked + 1) };
}

describe('latestHistory', () => {
  it('gives what trimming the whole session gave, for sessions long and short, budgets small and large', async () => {
    let seed = 11;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return below <= 0 ? 0 : seed % below;
    };
    for (let trial = 0; trial < 150; trial++) {
      const store = new MemoryStore();
      await store.createSession('s');
      const messages = turnsOf(random(400), random);
      // Now and then a session that does not start with a question, or ends with one.
      if (trial % 7 === 0) messages.unshift({ role: 'assistant', content: 'Hello.' });
      if (trial % 5 === 0) messages.push({ role: 'user', content: 'And then?' });
      if (messages.length) await store.appendMessages('s', messages, 0);
      // Budgets from nothing to more than the whole session, so reading stops on every page and at the start.
      const whole = messages.reduce(
        (sum, message) =>
          sum +
          (message.content?.length ?? 0) +
          (message.role === 'assistant' ? (message.toolCalls ?? []).reduce((calls, call) => calls + call.name.length + call.arguments.length, 0) : 0),
        0,
      );
      const budget = Math.max(1, Math.round((whole * random(120)) / 100));
      for (const beforeLastQuestion of [true, false]) {
        expect(await latestHistory(store, 's', budget, { beforeLastQuestion })).toEqual(wholeRead(messages, budget, beforeLastQuestion));
      }
    }
  });

  it('reads a long session back only as far as the budget holds, not its whole length', async () => {
    const store = new MemoryStore();
    await store.createSession('s');
    await store.appendMessages(
      's',
      turnsOf(2_000, () => 10),
      0,
    );
    const read = vi.spyOn(store, 'listLatestMessages');
    const { history } = await latestHistory(store, 's', 2_000, { beforeLastQuestion: true });
    expect(history.length).toBeGreaterThan(0);
    // The session holds 44,000 messages; one page of 256 covers this budget.
    expect(read).toHaveBeenCalledTimes(1);
  });
});
