import type { ChatMessage, ErrorEvent } from '@stepwise/shared-types';
import { DEFAULT_STRATEGY, type RunInput } from '../agent/kernel/strategy.ts';
import { isImageName } from '../files/model-images.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { reject } from './run-commands.ts';
import { PLAIN_CHAT } from './session-runs.ts';

/** What a chat message asks a new run to do (its id and session are the session's to give). */
export type ChatRequest = Omit<RunInput, 'runId' | 'sessionId' | 'history'> & { strategy: string };

/**
 * Checks a chat message and says what run it asks for: a plain answer, or an agent run with its
 * strategy, tools, options and budgets (the server's defaults and limits applied); or why not.
 */
export function chatRequest(
  message: ChatMessage,
  deps: Pick<ChatDependencies, 'config' | 'tools' | 'kernel'>,
): { request: ChatRequest } | { error: ErrorEvent } {
  const { config, tools, kernel } = deps;
  const images = (message.attachments ?? []).filter(isImageName);
  if (images.length > config.images.maxPerMessage) {
    return {
      error: reject(
        'too_many_images',
        `A message may send at most ${config.images.maxPerMessage} images (IMAGE_MAX_PER_MESSAGE); this one has ${images.length}`,
      ),
    };
  }
  const attached = images.length ? { images: [...new Set(images)] } : {};
  if (!message.agent_mode) return { request: { strategy: PLAIN_CHAT, question: message.content, toolNames: [], maxSteps: 0, options: {}, ...attached } };
  const toolNames = message.tools ?? tools.defaultNames();
  const unknown = toolNames.filter((name) => !tools.has(name));
  if (unknown.length > 0) return { error: reject('unknown_tool', `Unknown tool(s): ${unknown.join(', ')}`) };
  const strategy = message.strategy ?? DEFAULT_STRATEGY;
  if (!kernel.names.includes(strategy)) {
    return { error: reject('unknown_strategy', `Unknown strategy "${strategy.slice(0, 64)}"; known: ${kernel.names.join(', ')}`) };
  }
  const checked = kernel.checkOptions(strategy, message.strategy_options);
  if (!checked.ok) return { error: reject('invalid_message', `Invalid "chat" message: ${checked.message}`) };
  const { maxStepsDefault, maxStepsLimit } = config.agent;
  const maxSteps = Math.min(maxStepsLimit, Math.max(1, message.agent_max_steps ?? maxStepsDefault));
  const maxCostUsd = message.max_cost_usd ?? config.agent.runCostBudgetUsd;
  return {
    request: {
      strategy,
      question: message.content,
      toolNames: [...new Set(toolNames)],
      maxSteps,
      options: checked.options,
      ...(message.tool_approval ? { toolApproval: message.tool_approval } : {}),
      ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
      ...attached,
    },
  };
}
