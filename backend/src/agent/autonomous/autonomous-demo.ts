import type { Todo } from '@stepwise/shared-types';
import type { CompletionRequest, CompletionResult, DemoKit, LlmToolCall } from '../../llm/llm-client.ts';
import { answerOf, nextToolCall, notEnabledProblem, readSituation, requestParts } from '../common/demo-language.ts';
import { TODO_TOOL } from './todos.ts';
import { isSteerTurn } from '../kernel/steering.ts';

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
  // Only this request's list counts: an earlier run's is done with.
  const asked = request.messages.findLastIndex(
    (message) => message.role === 'user' && !message.content.startsWith('<system-reminder>') && !isSteerTurn(message.content),
  );
  const wroteList = request.messages
    .slice(asked + 1)
    .some((message) => message.role === 'assistant' && message.toolCalls?.some((call) => call.name === TODO_TOOL && call.arguments.includes('"write"')));
  const facts = partsOf(situation.question);
  const parts = facts ? [] : requestParts(situation);
  const allDone = todos.every((todo) => todo.status === 'completed');
  const finalSummary = () =>
    facts ? `Here is what I found, one todo at a time:\n\n${todos.map((todo) => `- ${factFor(todo)}`).join('\n')}` : answerOf(situation);

  if (offered.has(TODO_TOOL) && !wroteList && allDone && (facts || parts.length > 1)) {
    const titles = facts ? Array.from({ length: facts.count }, (_, index) => `Fact ${index + 1} about “${facts.topic}”`) : parts.map((part) => part.title);
    const intro = facts
      ? `I will keep a list of the ${facts.count} facts and work through it.`
      : `This request has ${parts.length} parts; I will keep a list and work through it.`;
    return call(intro, TODO_TOOL, { operation: 'write', todos: titles.map((title) => ({ title })) });
  }
  const inProgress = todos.findIndex((todo) => todo.status === 'in_progress');
  const next = todos.find((todo) => todo.status === 'pending');
  // Each iteration does as much as it can in order: the todo done, the next started with its work
  // (its tool call), and with the last one done the answer; so a list of N parts takes N + 2 iterations.
  const workFor = (index: number) => {
    const part = parts[index];
    if (!part || part.done) return [];
    const needed = nextToolCall(situation);
    return needed.call ? [needed.call] : [];
  };
  if (wroteList && inProgress >= 0) {
    const todo = todos[inProgress]!;
    const part = parts[inProgress];
    // The part's work first when it is not done yet (its tool call), then the todo completed.
    const work = workFor(inProgress);
    if (work.length > 0) return { text: '', toolCalls: work };
    const done = toolCall(TODO_TOOL, { operation: 'update', id: todo.id, status: 'completed' });
    const finding = facts ? factFor(todo) : (part?.finding ?? `${todo.title}: done.`);
    if (!next) return { text: `${finalSummary()}\n\n[WORKFLOW_COMPLETE]`, toolCalls: [done] };
    const start = toolCall(TODO_TOOL, { operation: 'update', id: next.id, status: 'in_progress' });
    return { text: finding, toolCalls: [done, start, ...workFor(todos.indexOf(next))] };
  }
  if (wroteList && next)
    return { text: '', toolCalls: [toolCall(TODO_TOOL, { operation: 'update', id: next.id, status: 'in_progress' }), ...workFor(todos.indexOf(next))] };
  if (wroteList && todos.length > 0) return demo.say(`${finalSummary()}\n\n[WORKFLOW_COMPLETE]`, request);
  // A single request: the tool calls it needs one at a time (every link of a calculation, the
  // clock, a file, a question when it is vague), as every strategy's demo does them; then the
  // answer from what they gave.
  const needed = nextToolCall(situation);
  if (needed.call) return { text: needed.next === 'request_input' ? 'I need to know more before I can start.' : '', toolCalls: [needed.call] };
  return demo.say(answerOf(situation, needed.notEnabled ? { problems: [notEnabledProblem(needed.notEnabled)] } : {}), request);
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
