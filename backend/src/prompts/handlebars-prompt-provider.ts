import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Handlebars from 'handlebars';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { PromptError } from '../errors.ts';
import { TOKENS } from '../tokens.ts';
import type { PromptProvider, PromptSamples, PromptSet } from './prompt-provider.ts';

/**
 * Handlebars templates from the prompts folder (PROMPTS_DIR): `FOLDER/NAME.md`, one folder per
 * strategy. Strict, so an unknown variable is an error, not a blank; no HTML escaping (prompts
 * are not HTML).
 */
@injectable()
export class HandlebarsPromptProvider implements PromptProvider {
  private readonly handlebars = Handlebars.create();

  constructor(@inject(TOKENS.Config) private readonly config: Config) {
    this.handlebars.registerHelper('join', (items: unknown, separator: unknown) =>
      Array.isArray(items) ? items.join(typeof separator === 'string' ? separator : ', ') : '',
    );
  }

  load<P extends PromptSamples>(folder: string, samples: P): PromptSet<P> {
    const templates = new Map<string, Handlebars.TemplateDelegate>();
    for (const [name, sample] of Object.entries(samples)) {
      const id = `${folder}/${name}`;
      const path = resolve(this.config.prompts.dir, folder, `${name}.md`);
      let source: string;
      try {
        source = readFileSync(path, 'utf8');
      } catch (error) {
        throw new PromptError(`Prompt template "${id}" not found at ${path}`, error);
      }
      try {
        const template = this.handlebars.compile(source, { strict: true, noEscape: true });
        template(sample);
        templates.set(name, template);
      } catch (error) {
        const detail = error instanceof Error ? error.message.split('\n')[0] : String(error);
        throw new PromptError(`Prompt template "${id}" (${path}) is invalid: ${detail}`, error);
      }
    }
    return {
      render(name, variables) {
        const template = templates.get(name);
        if (!template) throw new PromptError(`No prompt template "${folder}/${name}" was loaded`);
        try {
          return template(variables).trim();
        } catch (error) {
          throw new PromptError(`Prompt "${folder}/${name}" could not be rendered: ${(error as Error).message}`, error);
        }
      },
    };
  }
}
