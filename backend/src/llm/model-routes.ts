import type { Config } from '../config/config.ts';

/** The model a call goes to and the request fields it adds. */
export interface ModelChoice {
  model: string;
  params: Record<string, unknown>;
}

/**
 * The model for a purpose: the first of the config file's "models" whose glob matches it (`*`
 * stands for any run of characters), else LLM_MODEL. LLM_PARAMS apply to every call; a route's
 * own params are merged over them.
 */
export function modelFor(purpose: string, llm: Pick<Config['llm'], 'model' | 'models' | 'params'>): ModelChoice {
  const route = llm.models.find((candidate) => globMatches(candidate.purpose, purpose));
  return route ? { model: route.model, params: { ...llm.params, ...route.params } } : { model: llm.model, params: llm.params };
}

/** True when `glob` (letters, digits, `.`, `_`, `-` and `*`) matches all of `text`. */
export function globMatches(glob: string, text: string): boolean {
  const pattern = glob
    .split('*')
    .map((part) => part.replace(/[.-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(text);
}
