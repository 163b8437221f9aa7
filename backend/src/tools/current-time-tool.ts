import { z } from 'zod';
import type { Tool } from './tool.ts';

const CurrentTimeArgs = z.object({});

/** The current time, ISO-8601 in UTC. */
export const createCurrentTimeTool = (now: () => Date = () => new Date()): Tool<z.infer<typeof CurrentTimeArgs>> => ({
  name: 'current_time',
  description: 'Get the current date and time (ISO-8601, UTC).',
  source: 'builtin',
  parameters: CurrentTimeArgs,
  async execute() {
    return now().toISOString();
  },
});
