import { z } from 'zod';
import { defineStrategy, questionTurn } from '../kernel/strategy.ts';
import { chatDemo } from './chat-demo.ts';

const prompts = { system: { today: '2026-01-01' } };

/**
 * Plain chat, the simplest strategy: one streamed model call. It runs through the kernel like any
 * run (same budgets, same single ending, failures logged), with plain chat's wire: the answer's
 * deltas and `assistant_message`, no agent events, no run id on its events.
 */
export const chat = defineStrategy({
  name: 'chat',
  label: 'Plain chat',
  description: 'One answer from the model, no tools.',
  options: z.object({}).strict(),
  prompts,
  demo: chatDemo,
  hidden: true,
  wire: 'chat',
  async run(run) {
    const system = run.prompts.render('system', { today: new Date().toISOString().slice(0, 10) });
    const { text } = await run.llm.complete({
      purpose: 'chat',
      messages: [{ role: 'system', content: system }, ...run.input.history, questionTurn(run)],
      signal: run.control.signal,
      onDelta: (delta) => run.sink.preview(run.events.assistantDelta(delta)),
    });
    return { answer: text, steps: 0, reason: 'answered' };
  },
});
