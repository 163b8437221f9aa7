import { z } from 'zod';
import { runPhase } from '../common/phase.ts';
import { defineStrategy } from '../kernel/strategy.ts';

const Points = z.object({ points: z.array(z.string()).min(1).max(5) });

/** How a strategy is written: the tests run this one; it is not registered, so users never see it. */
export const example = defineStrategy({
  name: 'example',
  label: 'Example: one branch per point',
  description: 'Lists the points of a question as data, then thinks about each point in a branch of its own.',
  options: z.object({ max_points: z.number().int().min(1).max(5).default(3) }).strict(),
  prompts: { points: { question: 'q', max_points: 3 }, point: { question: 'q', point: 'p' } },
  demo: async (request) =>
    request.schema
      ? { text: '', toolCalls: [], parsed: { points: ['the first', 'the second'] } }
      : { text: `On ${String(request.variables?.point)}.`, toolCalls: [] },
  async run(run) {
    const { input, options, events, sink, control } = run;
    const ask = (system: string) => [
      { role: 'system' as const, content: system },
      { role: 'user' as const, content: input.question },
    ];
    const { parsed } = await run.llm.complete({
      purpose: 'example.points',
      schema: { name: 'points', zod: Points },
      messages: ask(run.prompts.render('points', { question: input.question, max_points: options.max_points })),
      signal: control.signal,
    });
    const notes: string[] = [];
    for (const [index, point] of parsed!.points.slice(0, Math.min(options.max_points, input.maxSteps)).entries()) {
      const [step, node] = [index + 1, String(index + 1)];
      run.progress.step = step;
      await sink.emit(events.node(node).turnStart(step));
      const { content } = await runPhase(run, {
        purpose: 'example.point',
        nodeId: node,
        template: 'point',
        variables: { question: input.question, point },
        messages: ask,
        preview: (delta) => events.node(node).reasonDelta(step, delta),
        event: (text) => events.node(node).reason(step, text),
      });
      notes.push(`${step}. ${content}`);
    }
    return { answer: notes.join('\n'), steps: notes.length, reason: 'answered' };
  },
});
