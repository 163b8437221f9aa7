import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadStrategyChoice, saveStrategyChoice } from '../../frontend/src/lib/strategy-choice.ts';
import { correctNumberText, initialValues, type OptionField, optionFields, optionsToSend } from '../../frontend/src/lib/strategy-options.ts';

/** An options schema as the server writes it into `strategy_catalog` (zod's JSON Schema of the input). */
const catalogSchema = (schema: z.ZodType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const planExecute = catalogSchema(
  z
    .object({
      max_step_attempts: z.number().int().min(1).max(10).default(3).describe('Attempts per plan step before it fails'),
      replan: z.boolean().default(true),
      mode: z.enum(['run', 'step']).default('run'),
      temperature: z.number().min(0).max(2).default(0.7),
      note: z.string().optional(),
      budget: z.number().int().optional(),
      tags: z.array(z.string()).default([]),
    })
    .strict(),
);

describe('the strategy options form', () => {
  it('maps an options schema to inputs: boolean → checkbox, integer/number → number with its range, enum → select, string → text', () => {
    expect(optionFields(planExecute)).toEqual<OptionField[]>([
      {
        name: 'max_step_attempts',
        label: 'Max step attempts',
        description: 'Attempts per plan step before it fails',
        kind: 'number',
        integer: true,
        min: 1,
        max: 10,
        defaultValue: 3,
      },
      { name: 'replan', label: 'Replan', kind: 'boolean', defaultValue: true },
      { name: 'mode', label: 'Mode', kind: 'enum', choices: ['run', 'step'], defaultValue: 'run' },
      { name: 'temperature', label: 'Temperature', kind: 'number', integer: false, min: 0, max: 2, defaultValue: 0.7 },
      { name: 'note', label: 'Note', kind: 'text' },
      // zod's "any safe integer" bounds are no bounds at all.
      { name: 'budget', label: 'Budget', kind: 'number', integer: true },
      // Lists are left to their defaults.
    ]);
  });

  it('shows nothing for roa (no options) and copes with schemas it cannot read', () => {
    expect(optionFields(catalogSchema(z.object({}).strict()))).toEqual([]);
    expect(optionFields(undefined)).toEqual([]);
    expect(optionFields({ properties: 'nope' })).toEqual([]);
    expect(optionFields({ properties: { odd: 3, deep: { type: 'object' } } })).toEqual([]);
  });

  it('reads titles, exclusive bounds, nullable options and unions of constants', () => {
    const fields = optionFields({
      type: 'object',
      properties: {
        level: { title: 'Reminder level', type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 4, default: 1 },
        focus: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'What to look at' },
        scope: { anyOf: [{ const: 'task' }, { const: 'stage' }], default: 'stage' },
        strict: { type: ['boolean', 'null'] },
      },
    });
    expect(fields).toEqual<OptionField[]>([
      { name: 'level', label: 'Reminder level', kind: 'number', integer: true, min: 1, max: 3, defaultValue: 1 },
      { name: 'focus', label: 'Focus', description: 'What to look at', kind: 'text' },
      { name: 'scope', label: 'Scope', kind: 'enum', choices: ['task', 'stage'], defaultValue: 'stage' },
      { name: 'strict', label: 'Strict', kind: 'boolean', defaultValue: false },
    ]);
  });

  it('pre-fills the defaults, or what the user chose before when it still fits', () => {
    const fields = optionFields(planExecute);
    expect(initialValues(fields)).toEqual({ max_step_attempts: '3', replan: true, mode: 'run', temperature: '0.7', note: '', budget: '' });
    const stored = { max_step_attempts: '5', replan: 'yes', mode: 'walk', gone: true, note: 'hi' };
    expect(initialValues(fields, stored)).toEqual({ max_step_attempts: '5', replan: true, mode: 'run', temperature: '0.7', note: 'hi', budget: '' });
  });

  it('sends only the options changed from their defaults, typed, clamped and whole where the schema says so', () => {
    const fields = optionFields(planExecute);
    expect(optionsToSend(fields, initialValues(fields))).toEqual({});
    expect(optionsToSend(fields, { max_step_attempts: '99', replan: false, mode: 'step', temperature: '0.25', note: 'fast', budget: '2.6' })).toEqual({
      max_step_attempts: 10,
      replan: false,
      mode: 'step',
      temperature: 0.25,
      note: 'fast',
      budget: 3,
    });
    // Typed nonsense or nothing falls back to the default, which is not sent.
    expect(optionsToSend(fields, { max_step_attempts: 'lots', replan: true, mode: 'run', temperature: '', note: '', budget: '' })).toEqual({});
    expect(optionsToSend(fields, { ...initialValues(fields), max_step_attempts: '0' })).toEqual({ max_step_attempts: 1 });
  });

  it('corrects a number input when it loses focus', () => {
    const [attempts] = optionFields(planExecute);
    if (attempts?.kind !== 'number') throw new Error('expected a number field');
    expect(correctNumberText(attempts, '4.4')).toBe('4');
    expect(correctNumberText(attempts, '-3')).toBe('1');
    expect(correctNumberText(attempts, 'x')).toBe('3');
  });
});

describe('the remembered strategy choice', () => {
  const memoryStorage = () => {
    const values = new Map<string, string>();
    return { getItem: (key: string) => values.get(key) ?? null, setItem: (key: string, value: string) => void values.set(key, value), values };
  };

  it('remembers the strategy and each strategy’s options in the browser', () => {
    const storage = memoryStorage();
    expect(loadStrategyChoice(storage)).toEqual({ options: {} });
    saveStrategyChoice({ strategy: 'plan_execute', options: { plan_execute: { replan: false } } }, storage);
    expect(loadStrategyChoice(storage)).toEqual({ strategy: 'plan_execute', options: { plan_execute: { replan: false } } });
  });

  it('forgets what it cannot read, and carries on when storage refuses', () => {
    const storage = memoryStorage();
    storage.values.set('stepwise.strategy', '{broken');
    expect(loadStrategyChoice(storage)).toEqual({ options: {} });
    storage.values.set('stepwise.strategy', JSON.stringify({ strategy: 7, options: [] }));
    expect(loadStrategyChoice(storage)).toEqual({ options: {} });
    const refusing = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('full');
      },
    };
    expect(loadStrategyChoice(refusing)).toEqual({ options: {} });
    expect(() => saveStrategyChoice({ options: {} }, refusing)).not.toThrow();
    expect(loadStrategyChoice(undefined)).toEqual({ options: {} });
  });
});
