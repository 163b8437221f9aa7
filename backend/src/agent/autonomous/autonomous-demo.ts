import type { Todo } from '@stepwise/shared-types';
import type { CompletionRequest, CompletionResult, DemoKit, LlmToolCall } from '../../llm/llm-client.ts';
import { findingsOf, nextToolCall, readSituation, shorten } from '../demo-language.ts';
import { TODO_TOOL } from './todos.ts';

const COUNTS: Record<string, number> = { two: 2, three: 3, four: 4, five: 5, '2': 2, '3': 3, '4': 4, '5': 5 };

/**
 * The demo model's answers to autonomous's calls. A request with several parts ("tell three short
 * facts about octopus and keep a list") gets a todo list, worked through one todo at a time (in
 * progress, the work, completed) and a summary ending with the marker. The facts are about the
 * word itself, computed, so they are true: its letters, its vowels, its spelling backwards. Any
 * other request is answered directly (with the calculator for arithmetic), a natural stop.
 */
export async function autonomousDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  if (request.purpose !== 'autonomous.iteration') return demo.unknownPurpose(request);
  await demo.pause(request.signal);
  const todos = (request.variables?.todos ?? []) as Todo[];
  // The last message is the iteration's guidance (a system reminder), not the user's words.
  const last = request.messages.at(-1);
  const reminder = last?.role === 'user' && last.content.startsWith('<system-reminder>');
  const situation = readSituation(reminder ? { ...request, messages: request.messages.slice(0, -1) } : request);
  const offered = situation.offered;
  const wroteList = request.messages.some((message) => message.role === 'assistant' && message.toolCalls?.some((call) => call.name === TODO_TOOL && call.arguments.includes('"write"')));
  const parts = partsOf(situation.question);

  if (parts && offered.has(TODO_TOOL) && !wroteList && todos.every((todo) => todo.status === 'completed')) {
    const titles = Array.from({ length: parts.count }, (_, index) => `Fact ${index + 1} about “${parts.topic}”`);
    return call(`I will keep a list of the ${parts.count} facts and work through it.`, TODO_TOOL, { operation: 'write', todos: titles.map((title) => ({ title })) });
  }
  const inProgress = todos.find((todo) => todo.status === 'in_progress');
  const next = todos.find((todo) => todo.status === 'pending');
  if (inProgress) {
    // The work, its todo completed, and the next one started: the updates apply in order.
    const done = toolCall(TODO_TOOL, { operation: 'update', id: inProgress.id, status: 'completed' });
    const start = next ? [toolCall(TODO_TOOL, { operation: 'update', id: next.id, status: 'in_progress' })] : [];
    return { text: factFor(inProgress), toolCalls: [done, ...start] };
  }
  if (next) return call('', TODO_TOOL, { operation: 'update', id: next.id, status: 'in_progress' });
  if (todos.length > 0 && wroteList) {
    const summary = todos.map((todo) => `- ${factFor(todo)}`).join('\n');
    return demo.say(`Here is what I found, one todo at a time:\n\n${summary}\n\n${'[WORKFLOW_COMPLETE]'}`, request);
  }
  // A single request: the tool calls it needs one at a time (every link of a calculation, the
  // clock, a file), as every strategy's demo does them; then the answer from what they gave.
  const needed = nextToolCall(situation);
  if (needed.call && needed.next !== 'request_input') return { text: '', toolCalls: [needed.call] };
  const { answers } = findingsOf(situation);
  if (needed.notEnabled) answers.push(`The **${needed.notEnabled}** tool is not enabled for this run; tick it under Tools to let me do this.`);
  if (answers.length > 0) return demo.say(answers.join('\n\n'), request);
  return demo.say(
    `You asked: “${shorten(situation.question)}”. I work best on a request with several parts — try “tell three short facts about octopus and keep a list”.`,
    request,
  );
}

/** "three facts about X" → 3 and X; undefined for a request of one part. */
export function partsOf(question: string): { count: number; topic: string } | undefined {
  const match = /\b(two|three|four|five|[2-5])\b[^.?!]*?\babout\s+(?:the\s+word\s+)?["“']?([\p{L}\p{N}-]+)/iu.exec(question);
  if (!match) return undefined;
  return { count: COUNTS[match[1]!.toLowerCase()]!, topic: match[2]! };
}

/** A true fact about the word in a todo's title, chosen by the todo's place. */
export function factFor(todo: Todo): string {
  const topic = /“([^”]+)”/.exec(todo.title)?.[1] ?? todo.title;
  const letters = [...topic].filter((char) => /\p{L}/u.test(char));
  const vowels = letters.filter((char) => /[aeiouy]/i.test(char)).length;
  const facts = [
    `“${topic}” has ${letters.length} letter${letters.length === 1 ? '' : 's'}.`,
    `“${topic}” has ${vowels} vowel${vowels === 1 ? '' : 's'} (counting y).`,
    `Spelled backwards, “${topic}” is “${[...topic].reverse().join('')}”.`,
    `“${topic}” starts with “${[...topic][0]}” and ends with “${[...topic].at(-1)}”.`,
    `In capitals, “${topic}” is “${topic.toUpperCase()}”.`,
  ];
  const index = (Number.parseInt(todo.id, 10) || 1) - 1;
  return `**${todo.title}:** ${facts[index % facts.length]}`;
}

function call(text: string, name: string, args: unknown): CompletionResult {
  return { text, toolCalls: [toolCall(name, args)] };
}

function toolCall(name: string, args: unknown): LlmToolCall {
  return { id: `call_demo_${name}_${Math.abs(hash(JSON.stringify(args)))}`, name, arguments: JSON.stringify(args) };
}

function hash(text: string): number {
  let value = 0;
  for (let i = 0; i < text.length; i++) value = (value * 31 + text.charCodeAt(i)) | 0;
  return value;
}
