import type { Config } from '../config/config.ts';
import { ERROR_CODE, ModelError } from '../errors.ts';
import type { LlmMessage } from '../messages.ts';

/** The model a call goes to and the request fields it adds. */
export interface ModelChoice {
  model: string;
  params: Record<string, unknown>;
  /** Whether the model can see images: its route's `vision`, else LLM_VISION (by name when `auto`). */
  vision: boolean;
  /** The config file's endpoint that serves it; unset: the environment's (OPENAI_BASE_URL, Azure). */
  endpoint?: string;
}

type RouteSettings = Pick<Config['llm'], 'model' | 'models' | 'params' | 'vision'>;

/**
 * The model for a purpose: the first of the config file's "models" whose glob matches it (`*`
 * stands for any run of characters), else LLM_MODEL. LLM_PARAMS apply to every call; a route's
 * own params are merged over them.
 */
export function modelFor(purpose: string, llm: RouteSettings): ModelChoice {
  return modelChain(purpose, llm)[0]!;
}

/** The model for a purpose and, after it, its fallbacks in the order they are tried. */
export function modelChain(purpose: string, llm: RouteSettings): ModelChoice[] {
  const route = llm.models.find((candidate) => globMatches(candidate.purpose, purpose));
  if (!route) return [{ model: llm.model, params: llm.params, vision: llm.vision === 'auto' ? seesByName(llm.model) : llm.vision }];
  return [route, ...(route.fallbacks ?? [])].map((target) => ({
    model: target.model,
    params: { ...llm.params, ...target.params },
    vision: target.vision ?? (llm.vision === 'auto' ? seesByName(target.model) : llm.vision),
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
  }));
}

/**
 * Models known to take images, by name (LLM_VISION=auto): OpenAI's gpt-4o, gpt-4.1, gpt-5, o1,
 * o3, o4 and gpt-4-turbo families, Claude 3 and later, Gemini, and open models whose name says
 * so (llava, bakllava, moondream, minicpm-v, *-vl, *vision*, gemma3, llama4, pixtral). Any other
 * model is taken not to see; LLM_VISION=true or a route's `vision` says otherwise.
 */
export function seesByName(model: string): boolean {
  const name = model.toLowerCase().replace(/^.*\//, '');
  return /^(gpt-4o|gpt-4\.1|gpt-5|gpt-4-turbo|o1|o3|o4|chatgpt-4o|claude-(3|sonnet|opus|haiku)|gemini|llava|bakllava|moondream|minicpm-v|gemma-?3|llama-?4|pixtral)|-vl\b|vl-|vision/.test(
    name,
  );
}

/** True when `glob` (letters, digits, `.`, `_`, `-` and `*`) matches all of `text`. */
export function globMatches(glob: string, text: string): boolean {
  const pattern = glob
    .split('*')
    .map((part) => part.replace(/[.-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(text);
}

/**
 * Refuses, before any request, a call that shows images to a model that cannot see them, naming
 * the model, the purpose and the settings that say otherwise. `category: 'request'`: the endpoint's
 * health is not in question.
 */
export function checkVision(purpose: string, messages: readonly LlmMessage[], choice: ModelChoice): void {
  if (choice.vision || !messages.some((message) => message.role === 'user' && message.images?.length)) return;
  throw new ModelError(
    `The message has images, but the model for "${purpose}" (${choice.model}) cannot see them. Set LLM_VISION=true if it can, or send this purpose to a vision model in the config file's "models" (with "vision": true).`,
    { code: ERROR_CODE.visionUnsupported, category: 'request' },
  );
}
