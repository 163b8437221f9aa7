import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, HandlebarsPromptProvider, PromptError, REPOSITORY_PATHS, RunKernel, STRATEGIES } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

/** A prompts folder with these files (paths relative to it, e.g. "roa/reason.md"). */
function promptsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-prompts-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const samples = {
  reason: { question: 'q', step: 1 },
  act: { plan: 'p' },
};
const valid = { 'demo/reason.md': 'Reason about {{question}} at step {{step}}', 'demo/act.md': 'Act on {{plan}}' };
const load = (files: Record<string, string>) => () => new HandlebarsPromptProvider(configFromEnv({ PROMPTS_DIR: promptsDir(files) })).load('demo', samples);

describe('the prompt provider', () => {
  it('renders the repository templates with every variable', () => {
    const provider = new HandlebarsPromptProvider(configFromEnv({ PROMPTS_DIR: REPOSITORY_PATHS.prompts }));
    const roa = STRATEGIES.find((strategy) => strategy.name === 'roa')!;
    const reason = provider.load('roa', roa.prompts).render('reason', {
      question: 'What is 2+2?',
      files_manifest: '',
      last_observation: 'nothing yet',
      step: 2,
      max_steps: 5,
      tool_names: ['calculator', 'current_time'],
    });
    expect(reason).toContain('step 2 of at most 5');
    expect(reason).toContain('What is 2+2?');
    expect(reason).toContain('calculator, current_time');
    expect(reason).toContain('nothing yet');
  });

  it('loads every strategy’s templates from the repository at startup', () => {
    const provider = new HandlebarsPromptProvider(configFromEnv({ PROMPTS_DIR: REPOSITORY_PATHS.prompts }));
    for (const strategy of STRATEGIES) expect(() => provider.load(strategy.name, strategy.prompts)).not.toThrow();
  });

  it('renders a folder’s template with its variables', () => {
    expect(load(valid)().render('reason', { question: 'why', step: 3 })).toBe('Reason about why at step 3');
  });

  it('fails at load when a template is missing', () => {
    const { ['demo/act.md']: _missing, ...rest } = valid;
    expect(load(rest)).toThrow(PromptError);
    expect(load(rest)).toThrow(/Prompt template "demo\/act" not found/);
  });

  it('fails at load when a template uses an unknown variable', () => {
    expect(load({ ...valid, 'demo/reason.md': 'Hello {{usr_question}}' })).toThrow(/Prompt template "demo\/reason" .* is invalid: "usr_question" not defined/);
  });

  it('fails at load on a template that does not compile', () => {
    expect(load({ ...valid, 'demo/act.md': '{{#if plan}}unclosed' })).toThrow(/"demo\/act" .* is invalid/);
  });

  it('stops startup when a strategy’s template is missing: the kernel loads every strategy’s prompts', () => {
    const dir = promptsDir({ 'chat/system.md': 'Today is {{today}}' });
    const config = configFromEnv({ PROMPTS_DIR: dir });
    const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
    expect(
      () => new RunKernel([...STRATEGIES], undefined as never, undefined as never, new HandlebarsPromptProvider(config), config, silent, undefined as never),
    ).toThrow(/Prompt template "roa\/reason" not found/);
  });
});
