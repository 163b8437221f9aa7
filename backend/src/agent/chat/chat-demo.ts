import type { CompletionRequest, CompletionResult, DemoKit } from '../../llm/llm-client.ts';
import { fallbackAnswer, readSituation, type Situation } from '../common/demo-language.ts';

/** The demo model's plain chat answer: it points arithmetic to agent mode and says what it can do. */
export async function chatDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  return demo.say(chatReply(readSituation(request)), request);
}

function chatReply(situation: Situation): string {
  if (situation.expression) {
    return `That looks like arithmetic: \`${situation.expression}\`. Switch on **Agent mode** and I will work it out with the calculator, step by step.`;
  }
  return fallbackAnswer(situation);
}
