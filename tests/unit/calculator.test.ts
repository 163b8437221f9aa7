import { calculatorTool, evaluateExpression, ToolExecutionError } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

describe('the calculator', () => {
  it.each([
    ['(17+25)*3', 126],
    ['1 + 2 * 3', 7],
    ['2 ^ 3 ^ 2', 512],
    ['2 ** 10', 1024],
    ['-2 ^ 2', -4],
    ['(-2) ^ 2', 4],
    ['--3', 3],
    ['10 % 4', 2],
    ['7 / 2', 3.5],
    ['0.1 + 0.2', 0.3],
    ['1.5e3 + .5', 1500.5],
    ['sqrt(16) + abs(-3)', 7],
    ['max(1, 5, 3) - min(4, 2)', 3],
    ['round(pi * 100) / 100', 3.14],
    ['log(1000)', 3],
    ['log(8, 2)', 3],
    ['ln(e)', 1],
    ['sin(0) + cos(0)', 1],
    ['6 × 7 ÷ 2', 21],
  ])('evaluates %s = %d', (expression, expected) => {
    expect(evaluateExpression(expression)).toBe(expected);
  });

  it.each([
    ['1 / 0', /Division by zero/],
    ['2 +', /ended unexpectedly/],
    ['(1 + 2', /Expected "\)"/],
    ['1 + 2)', /Unexpected "\)"/],
    ['process.exit(1)', /Unexpected character|Unknown name/],
    ['constructor', /Unknown name "constructor"/],
    ['sqrt', /sqrt is a function/],
    ['sqrt(1, 2)', /takes 1 argument/],
    ['', /empty/],
    ['sqrt(-1)', /not a finite number/],
    [`${'('.repeat(500)}1${')'.repeat(500)}`, /nested too deeply/],
  ])('refuses %s', (expression, message) => {
    expect(() => evaluateExpression(expression)).toThrow(message);
  });

  it('never evaluates code', () => {
    expect(() => evaluateExpression('globalThis')).toThrow(/Unknown name/);
    expect(() => evaluateExpression('"a"')).toThrow(/Unexpected character/);
  });

  it('reports parse failures as tool errors', async () => {
    const context = { signal: new AbortController().signal, sessionId: 's', runId: 'r' };
    await expect(calculatorTool.execute({ expression: '2 +* 3' }, context)).rejects.toBeInstanceOf(ToolExecutionError);
    await expect(calculatorTool.execute({ expression: '2 + 3' }, context)).resolves.toBe(5);
  });
});
