/**
 * One example of each template's variables, by template name. A strategy declares its prompts
 * this way: the names say which files it needs, the examples (rendered once at startup) prove each
 * template sound, and their types are the variables `render` then asks for.
 */
export type PromptSamples = Record<string, Record<string, unknown>>;

/** The compiled templates of one folder (a strategy's, or plain chat's). */
export interface PromptSet<P extends PromptSamples = PromptSamples> {
  render<K extends keyof P & string>(name: K, variables: P[K]): string;
}

/** Loads prompt templates; a missing template or an unknown variable fails at load, never later. */
export interface PromptProvider {
  /** Compiles FOLDER/NAME.md for every NAME of `samples` and renders each with its sample; throws PromptError. */
  load<P extends PromptSamples>(folder: string, samples: P): PromptSet<P>;
}
