import { z } from 'zod';
import { ToolExecutionError } from '../errors.ts';
import { evaluateExpression, ExpressionError } from './expression.ts';
import type { Tool } from './tool.ts';

const CalculatorArgs = z.object({
  expression: z.string().min(1).max(2_000).describe('An arithmetic expression, e.g. "(17+25)*3" or "sqrt(2)^2"'),
});

/** Arithmetic with a real parser: + - * / % ^, parentheses, unary minus, functions and constants. */
export const calculatorTool: Tool<z.infer<typeof CalculatorArgs>> = {
  name: 'calculator',
  description:
    'Evaluate an arithmetic expression. Supports + - * / % ^, parentheses, sqrt, abs, sin, cos, tan, ln, log, exp, ' +
    'floor, ceil, round, min, max, pow and the constants pi and e. Returns the numeric value.',
  source: 'builtin',
  parameters: CalculatorArgs,
  async execute({ expression }) {
    try {
      return evaluateExpression(expression);
    } catch (error) {
      if (error instanceof ExpressionError) throw new ToolExecutionError(error.message);
      throw error;
    }
  },
};
