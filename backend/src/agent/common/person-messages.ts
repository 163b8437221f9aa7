import type { CompletionResult } from '../../llm/llm-client.ts';
import type { LlmMessage } from '../../messages.ts';
import { steerTurn } from '../kernel/steering.ts';

/** A message a person sent a run while it worked, as a model call read it (`CompletionResult.steers`). */
export type PersonMessage = NonNullable<CompletionResult['steers']>[number];

/** Messages read earlier, for a later call: the same user turns the call that read them had. */
export function personTurns(messages: readonly PersonMessage[]): LlmMessage[] {
  return messages.map(steerTurn);
}
