import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { TOKENS } from '../tokens.ts';
import { sleep } from '../util/abort.ts';
import type { CompletionRequest, CompletionResult, LlmClient, LlmToolCall } from './llm-client.ts';

const SETUP_HINT =
  'To use a real model, set `OPENAI_BASE_URL` (and `OPENAI_API_KEY` if the endpoint needs one) and restart Stepwise.';

/** What the demo model reads from a conversation: the request and the results it already has. */
interface Situation {
  question: string;
  /** The question plus the user's clarification, when one was given. */
  request: string;
  expression: string | undefined;
  wantsTime: boolean;
  ambiguous: boolean;
  results: Map<string, string>;
  clarification: string | undefined;
  offered: Set<string>;
}

/**
 * An offline, deterministic stand-in for a model, so that a fresh checkout works end to end with
 * no key: it uses the calculator for arithmetic, the clock for the time, and asks a clarifying
 * question when a request is too vague to act on.
 */
@injectable()
export class DemoLlmClient implements LlmClient {
  readonly isDemo = true;
  readonly modelName = 'Demo model (offline, built in)';
  private readonly delayMs: number;

  constructor(@inject(TOKENS.Config) config: Config) {
    this.delayMs = config.llm.demoDelayMs;
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    const situation = read(request);
    switch (request.purpose) {
      case 'chat':
        return this.say(chatReply(situation), request);
      case 'reason':
        return this.say(reasonReply(situation), request);
      case 'act':
        await sleep(this.delayMs, request.signal);
        return actReply(situation);
      case 'observe':
        return this.say(observeReply(situation), request);
      default: {
        const unexpected: never = request.purpose;
        throw new Error(`Unknown purpose ${String(unexpected)}`);
      }
    }
  }

  /** Streams text word by word, as a real model would. */
  private async say(text: string, request: CompletionRequest): Promise<CompletionResult> {
    for (const piece of text.match(/\S+\s*|\s+/g) ?? []) {
      await sleep(this.delayMs, request.signal);
      request.onDelta?.(piece);
    }
    return { text, toolCalls: [] };
  }
}

function read(request: CompletionRequest): Situation {
  const lastUser = findLastIndex(request.messages, (message) => message.role === 'user');
  const question = lastUser >= 0 ? (request.messages[lastUser] as { content: string }).content : '';
  const results = new Map<string, string>();
  const callNames = new Map<string, string>();
  for (const message of request.messages.slice(lastUser + 1)) {
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) callNames.set(call.id, call.name);
    if (message.role === 'tool') results.set(callNames.get(message.toolCallId) ?? 'unknown', message.content);
  }
  const clarification = results.get('request_input');
  const fullRequest = clarification ? `${question}\n${clarification}` : question;
  const expression = findExpression(fullRequest);
  const wantsTime = /\b(time|date|today|clock)\b/i.test(fullRequest);
  const words = question.trim().split(/\s+/).filter(Boolean);
  const vague = /\b(something|anything|stuff|it|this|that|help)\b/i.test(question);
  return {
    question,
    request: fullRequest,
    expression,
    wantsTime,
    ambiguous: !expression && !wantsTime && (words.length <= 3 || (vague && words.length <= 6)),
    results,
    clarification,
    offered: new Set((request.tools ?? []).map((tool) => tool.name)),
  };
}

/** What is still to be done, in the order the demo does it. */
function pending(situation: Situation): 'calculator' | 'current_time' | 'request_input' | undefined {
  const { expression, wantsTime, ambiguous, results, clarification } = situation;
  if (expression && !results.has('calculator')) return 'calculator';
  if (wantsTime && !results.has('current_time')) return 'current_time';
  if (ambiguous && clarification === undefined) return 'request_input';
  return undefined;
}

function reasonReply(situation: Situation): string {
  const next = pending(situation);
  const plans = {
    calculator: `Evaluate ${situation.expression} with the calculator.`,
    current_time: 'Read the current time with the current_time tool.',
    request_input: 'The request is too vague to act on, so ask the user what exactly they need.',
  } as const;
  const plan = next ? plans[next] : 'Everything needed is known, so answer directly.';
  const intro = next
    ? `The user wrote: "${shorten(situation.question)}". ${plan}`
    : `I have what I need to answer "${shorten(situation.question)}".`;
  return `${intro}\n\n\`\`\`json\n${JSON.stringify({ plan, tools_to_consider: next ? [next] : [], finish: !next })}\n\`\`\``;
}

function actReply(situation: Situation): CompletionResult {
  const next = pending(situation);
  if (!next || (next !== 'request_input' && !situation.offered.has(next))) {
    return { text: next ? `The ${next} tool is not enabled for this run.` : 'No tool is needed.', toolCalls: [] };
  }
  const args = {
    calculator: { expression: situation.expression },
    current_time: {},
    request_input: {
      question: `Could you tell me a bit more about what you need with "${shorten(situation.question)}"? For example, a calculation I should do.`,
    },
  }[next];
  const call: LlmToolCall = { id: `call_demo_${next}`, name: next, arguments: JSON.stringify(args) };
  return { text: '', toolCalls: [call] };
}

function observeReply(situation: Situation): string {
  const { results, expression } = situation;
  const findings: string[] = [];
  const answers: string[] = [];
  const calculation = results.get('calculator');
  if (calculation !== undefined) {
    const failed = calculation.startsWith('Error:');
    findings.push(failed ? `The calculator could not evaluate it (${calculation}).` : `The calculator returned ${calculation}.`);
    answers.push(failed ? `I could not evaluate \`${expression}\`: ${calculation.replace(/^Error:\s*/, '')}` : `\`${expression}\` = **${calculation}**`);
  }
  const time = results.get('current_time');
  if (time !== undefined) {
    findings.push(`The clock says ${time}.`);
    answers.push(`It is now **${time}** (UTC).`);
  }
  if (situation.clarification !== undefined) findings.push(`The user clarified: "${shorten(situation.clarification)}".`);
  const unfinished = pending(situation);
  if (unfinished && unfinished !== 'request_input') {
    const observation = `${findings.join(' ')} Next I need the ${unfinished} tool.`.trim();
    return block(observation, { observation, should_continue: true, final_answer: '' });
  }
  if (answers.length === 0) answers.push(fallbackAnswer(situation));
  const observation = findings.join(' ') || 'No tool was needed.';
  return block(`${observation} That answers the request.`, {
    observation,
    should_continue: false,
    final_answer: answers.join('\n\n'),
  });
}

function chatReply(situation: Situation): string {
  if (situation.expression) {
    return `That looks like arithmetic: \`${situation.expression}\`. Switch on **Agent mode** and I will work it out with the calculator, step by step.`;
  }
  return fallbackAnswer(situation);
}

function fallbackAnswer(situation: Situation): string {
  const about = situation.clarification ?? situation.question;
  return [
    `You asked about "${shorten(about)}". I am the offline demo model, so I cannot really answer open questions.`,
    'What I can do: arithmetic with the calculator (try "What is (17+25)*3?" in agent mode), tell the time, and ask you when a request is unclear.',
    SETUP_HINT,
  ].join('\n\n');
}

function block(prose: string, control: object): string {
  return `${prose}\n\n\`\`\`json\n${JSON.stringify(control)}\n\`\`\``;
}

const EXPRESSION_PART = /(?:\b(?:sqrt|abs|sin|cos|tan|ln|log|exp|floor|ceil|round|min|max|pow|pi)\b|\d+(?:\.\d+)?|[-+*/%^×÷(),]|\s)+/gi;

/** The longest run of the text that looks like arithmetic: digits with at least one operator or function. */
export function findExpression(text: string): string | undefined {
  const candidates = (text.match(EXPRESSION_PART) ?? [])
    .map((candidate) => candidate.trim().replace(/^[,)]+|[,(]+$/g, '').trim())
    .filter((candidate) => /\d/.test(candidate) && /[-+*/%^×÷]|[a-z]\(/i.test(candidate) && !/^[-+]?\d+(\.\d+)?$/.test(candidate));
  return candidates.sort((a, b) => b.length - a.length)[0];
}

function shorten(text: string, max = 80): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

function findLastIndex<T>(items: T[], predicate: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) if (predicate(items[index]!)) return index;
  return -1;
}

