import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, HandlebarsPromptProvider, PromptError, REPOSITORY_PATHS } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

function providerWith(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-prompts-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return () => new HandlebarsPromptProvider(configFromEnv({ PROMPTS_DIR: dir }));
}

const valid = {
  'agent_reason_prompt.md': 'Reason about {{question}} at step {{step}}',
  'agent_act_prompt.md': 'Act on {{plan}}',
  'agent_observe_prompt.md': 'Observe {{tool_summaries}}',
  'chat_system_prompt.md': 'Today is {{today}}',
};

describe('the prompt provider', () => {
  it('renders the repository templates with every variable', () => {
    const provider = new HandlebarsPromptProvider(configFromEnv({ PROMPTS_DIR: REPOSITORY_PATHS.prompts }));
    const reason = provider.render('reason', {
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

  it('fails at startup when a template is missing', () => {
    const { ['agent_observe_prompt.md']: _missing, ...rest } = valid;
    expect(providerWith(rest)).toThrow(PromptError);
    expect(providerWith(rest)).toThrow(/Prompt template "observe" not found/);
  });

  it('fails at startup when a template uses an unknown variable', () => {
    expect(providerWith({ ...valid, 'agent_reason_prompt.md': 'Hello {{usr_question}}' })).toThrow(
      /Prompt template "reason" .* is invalid: "usr_question" not defined/,
    );
  });

  it('fails at startup on a template that does not compile', () => {
    expect(providerWith({ ...valid, 'agent_act_prompt.md': '{{#if plan}}unclosed' })).toThrow(/"act" .* is invalid/);
  });

  it('takes configurable file names', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-prompts-'));
    for (const [name, text] of Object.entries(valid)) writeFileSync(join(dir, name), text);
    writeFileSync(join(dir, 'custom.md'), 'Custom {{question}}');
    const provider = new HandlebarsPromptProvider(configFromEnv({ PROMPTS_DIR: dir, AGENT_REASON_PROMPT: 'custom.md' }));
    expect(provider.render('reason', { question: 'q', files_manifest: '', last_observation: '', step: 1, max_steps: 1, tool_names: [] })).toBe('Custom q');
  });
});
