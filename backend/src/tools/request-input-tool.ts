import type { LlmToolSchema } from '../messages.ts';

/** The name of the virtual tool the agent loop handles itself. */
export const REQUEST_INPUT_TOOL = 'request_input';

/** Offered to the model in agent mode only; never executed through the registry. */
export const requestInputSchema: LlmToolSchema = {
  name: REQUEST_INPUT_TOOL,
  description:
    'Pause and ask the user a clarifying question. Use it when the request is ambiguous or a needed detail is missing. ' +
    "The user's answer is returned as the result.",
  parameters: {
    type: 'object',
    properties: { question: { type: 'string', description: 'The question to show the user' } },
    required: ['question'],
    additionalProperties: false,
  },
};
