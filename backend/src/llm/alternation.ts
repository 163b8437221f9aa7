import type { LlmMessage } from '../messages.ts';

/**
 * Makes a conversation acceptable to endpoints that insist on strict turn-taking (chat templates
 * of Mistral and Gemma models on llama.cpp or vLLM, Anthropic's compatible endpoint), which
 * answer 400 to two user or two assistant messages in a row, to an empty message, or to a system
 * message after the first turn. The conversation's meaning is kept:
 * - empty messages are dropped (an assistant turn with tool calls is never empty);
 * - system messages after the first turn become user turns (a reminder reads the same);
 * - consecutive system messages at the start become one, as do consecutive user messages;
 * - consecutive assistant messages become one: their texts joined, the tool calls of the last
 *   kept (a tool-call turn is always followed by its results, so only a text-only turn can come
 *   before another assistant turn);
 * - tool results are left as they are: each answers its own call.
 * Pure and idempotent: applying it twice gives what applying it once gave.
 */
export function ensureAlternation(messages: readonly LlmMessage[]): LlmMessage[] {
  const result: LlmMessage[] = [];
  let seenTurn = false;
  for (const original of messages) {
    if (isEmpty(original)) continue;
    const message: LlmMessage = original.role === 'system' && seenTurn ? { role: 'user', content: original.content } : original;
    if (message.role !== 'system') seenTurn = true;
    const last = result.at(-1);
    if (last && last.role === message.role && message.role !== 'tool') {
      result[result.length - 1] = merge(last, message);
    } else {
      result.push(message);
    }
  }
  return result;
}

function isEmpty(message: LlmMessage): boolean {
  if (message.role === 'tool') return false;
  if (message.role === 'assistant' && message.toolCalls?.length) return false;
  return !message.content?.trim();
}

/** Two messages of one role (not tool) as one. */
function merge(first: LlmMessage, second: LlmMessage): LlmMessage {
  if (first.role === 'assistant' && second.role === 'assistant') {
    const content = joinTexts(first.content, second.content);
    const toolCalls = second.toolCalls?.length ? second.toolCalls : first.toolCalls;
    return { role: 'assistant', content: content || null, ...(toolCalls?.length ? { toolCalls } : {}) };
  }
  const content = joinTexts(first.content as string, second.content as string);
  if (first.role === 'user' || second.role === 'user') {
    // Images of either user turn stay with the merged turn.
    const images = [...(first.role === 'user' ? (first.images ?? []) : []), ...(second.role === 'user' ? (second.images ?? []) : [])];
    return { role: 'user', content, ...(images.length ? { images } : {}) };
  }
  return { role: 'system', content };
}

function joinTexts(a: string | null, b: string | null): string {
  return [a, b]
    .map((text) => text?.trim() ?? '')
    .filter(Boolean)
    .join('\n\n');
}

/**
 * Makes a request end as every chat template reads it: with a user or tool message. A request
 * that ends with an assistant message is taken by local servers as a prefill (the model goes on
 * with that message instead of answering the new instruction), and llama.cpp refuses two
 * assistant messages at the end outright. So when the transcript ends with the model's own text
 * (a phase that called no tool), a user turn follows that names the phase to do now; the phase's
 * full instruction is the request's system message. Chat calls and calls after tool results
 * already end right and are left as they are.
 */
export function endWithTurn(messages: readonly LlmMessage[], purpose: string): readonly LlmMessage[] {
  const last = messages.at(-1);
  // A plain chat's history ends with the person's message; only an agent's phases (`STRATEGY.PHASE`) get a closing turn.
  if (last?.role !== 'assistant' || !purpose.includes('.')) return messages;
  return [...messages, { role: 'user', content: phaseCue(purpose) }];
}

/** The user turn that asks for the phase a request is for, by its purpose (`roa.observe` → "the observe phase"). */
export function phaseCue(purpose: string): string {
  const phase = (purpose.split('.').at(-1) ?? purpose).replaceAll('_', ' ');
  return `Now do the ${phase} phase as the system message instructs: answer that instruction, do not continue your previous message.`;
}

/**
 * Whether an endpoint's refusal says it needs strict turn-taking: the chat templates of Mistral
 * and Gemma models raise "Conversation roles must alternate user/assistant/…", llama.cpp refuses
 * "2 or more assistant messages at the end".
 */
export function refusesTurnOrder(endpointMessage: string | undefined): boolean {
  return (
    endpointMessage !== undefined && /roles must alternate|must alternate|2 or more assistant messages|consecutive (user|assistant)/i.test(endpointMessage)
  );
}
