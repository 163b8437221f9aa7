import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Handlebars from 'handlebars';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { PromptError } from '../errors.ts';
import { TOKENS } from '../tokens.ts';
import type { PromptName, PromptProvider, PromptVariables } from './prompt-provider.ts';

/** One example of every prompt's variables: rendering them at startup proves each template is sound. */
const SAMPLES: PromptVariables = {
  reason: {
    question: 'q',
    files_manifest: '',
    last_observation: '',
    step: 1,
    max_steps: 2,
    tool_names: ['calculator'],
  },
  act: { question: 'q', plan: '', step: 1, max_steps: 2, tool_names: ['calculator'] },
  observe: { question: 'q', tool_summaries: '', tool_names: ['calculator'], step: 1, max_steps: 2, is_last_step: false },
  chatSystem: { today: '2026-01-01' },
};

/** Handlebars templates from the prompts folder; strict, so an unknown variable is an error, not a blank. */
@injectable()
export class HandlebarsPromptProvider implements PromptProvider {
  private readonly templates: { [K in PromptName]: Handlebars.TemplateDelegate<PromptVariables[K]> };

  constructor(@inject(TOKENS.Config) config: Config) {
    const { dir, reason, act, observe, chatSystem } = config.prompts;
    const handlebars = Handlebars.create();
    handlebars.registerHelper('join', (items: unknown, separator: unknown) =>
      Array.isArray(items) ? items.join(typeof separator === 'string' ? separator : ', ') : '',
    );
    const compile = <K extends PromptName>(name: K, file: string) => {
      const path = resolve(dir, file);
      let source: string;
      try {
        source = readFileSync(path, 'utf8');
      } catch (error) {
        throw new PromptError(`Prompt template "${name}" not found at ${path}`, error);
      }
      try {
        const template = handlebars.compile<PromptVariables[K]>(source, { strict: true, noEscape: true });
        template(SAMPLES[name]);
        return template;
      } catch (error) {
        const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
        throw new PromptError(`Prompt template "${name}" (${path}) is invalid: ${detail}`, error);
      }
    };
    this.templates = {
      reason: compile('reason', reason),
      act: compile('act', act),
      observe: compile('observe', observe),
      chatSystem: compile('chatSystem', chatSystem),
    };
  }

  render<K extends PromptName>(name: K, variables: PromptVariables[K]): string {
    const template = this.templates[name] as Handlebars.TemplateDelegate<PromptVariables[K]>;
    try {
      return template(variables).trim();
    } catch (error) {
      throw new PromptError(`Prompt "${name}" could not be rendered: ${(error as Error).message}`, error);
    }
  }
}
