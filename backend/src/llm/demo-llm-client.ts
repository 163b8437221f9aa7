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
  /** The current arithmetic step's expression (the chain's next link, from the running value). */
  expression: string | undefined;
  /** Every link of a chained calculation ("12*7, then add 15, …"), the first being an expression. */
  chain: ChainLink[];
  /** The calculator's results so far in this run, in order. */
  calculations: string[];
  wantsTime: boolean;
  ambiguous: boolean;
  results: Map<string, string>;
  clarification: string | undefined;
  offered: Set<string>;
  /** The tools this run may use (the act call's list, or the reason prompt's). */
  tools: Set<string>;
  /** A session file the user asks about, when read_file may be used. */
  file: string | undefined;
  wantsFileList: boolean;
  /** A file the message names that this chat does not have. */
  missingFile: string | undefined;
  /** Another enabled tool (an MCP server's, say) that the user names, with arguments for it. */
  named: { name: string; arguments: Record<string, unknown> } | undefined;
}

/** One link of a chained calculation: the first is an expression, the others an operation on the running value. */
interface ChainLink {
  operator?: '+' | '-' | '*' | '/';
  operand?: string;
  expression?: string;
  words: string;
}

type Next = 'calculator' | 'current_time' | 'read_file' | 'list_files' | 'named' | 'request_input';
const BUILT_IN_PLANS = new Set(['calculator', 'current_time', 'read_file', 'list_files', 'write_file', 'request_input']);

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
  const calculations: string[] = [];
  const callNames = new Map<string, string>();
  for (const message of request.messages.slice(lastUser + 1)) {
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) callNames.set(call.id, call.name);
    if (message.role === 'tool') {
      const tool = callNames.get(message.toolCallId) ?? 'unknown';
      results.set(tool, message.content);
      if (tool === 'calculator') calculations.push(message.content);
    }
  }
  const clarification = results.get('request_input');
  const fullRequest = clarification ? `${question}\n${clarification}` : question;
  const chain = findChain(fullRequest);
  const expression = nextExpression(chain, calculations);
  const wantsTime = /\b(time|date|today|clock)\b/i.test(fullRequest);
  const words = question.trim().split(/\s+/).filter(Boolean);
  const vague = /\b(something|anything|stuff|it|this|that|help)\b/i.test(question);
  const tools = availableTools(request);
  const toolNames = new Set(tools.map((tool) => tool.name));
  const file = toolNames.has('read_file') ? requestedFile(request, question) : undefined;
  const named_file = /\b([\w-]+(?:\.[\w-]+)*\.(?:txt|md|csv|json|log|pdf|docx?|html?|xml|ya?ml))\b/i.exec(question)?.[1];
  const missingFile = named_file && !file && request.purpose !== 'act' ? named_file : undefined;
  const wantsFileList = toolNames.has('list_files') && /\b(files?|attachments?|attached)\b/i.test(question) && !file;
  const named = namedTool(question, tools);
  return {
    question,
    request: fullRequest,
    expression,
    chain,
    calculations,
    wantsTime,
    ambiguous:
      !expression && !wantsTime && !file && !missingFile && !wantsFileList && !named && (words.length <= 3 || (vague && words.length <= 6)),
    missingFile,
    results,
    clarification,
    offered: new Set((request.tools ?? []).map((tool) => tool.name)),
    tools: toolNames,
    file,
    wantsFileList,
    named,
  };
}

/**
 * A session file the question names. Reason sees the files listed in its prompt; act reads the
 * file from the plan reason made.
 */
function requestedFile(request: CompletionRequest, question: string): string | undefined {
  const system = systemText(request);
  if (request.purpose === 'act') return /Read the file (.+?) with read_file\./.exec(system)?.[1];
  const listed = [...system.matchAll(/^- (.+) \([\d.]+ [KM]?B\)$/gm)].map((match) => match[1]!);
  return listed.sort((a, b) => b.length - a.length).find((name) => question.includes(name));
}

function systemText(request: CompletionRequest): string {
  const content = request.messages.find((message) => message.role === 'system')?.content;
  return typeof content === 'string' ? content : '';
}

/**
 * The tools this phase may use: the act call lists them; the reason prompt names them in its
 * "Tools available" line (the demo reads its prompt, as a model would).
 */
function availableTools(request: CompletionRequest): Array<{ name: string; parameters: Record<string, unknown> }> {
  if (request.tools) return request.tools;
  const line = /Tools (?:available in the ACT phase|enabled for this run): (.*)\./.exec(systemText(request))?.[1] ?? '';
  return line === 'none' ? [] : line.split(', ').filter(Boolean).map((name) => ({ name, parameters: {} }));
}

/** An enabled tool that is not built in and that the question names ("echo", "everything__echo"). */
function namedTool(question: string, tools: Array<{ name: string; parameters: Record<string, unknown> }>): Situation['named'] {
  const text = question.toLowerCase();
  for (const tool of tools) {
    if (BUILT_IN_PLANS.has(tool.name)) continue;
    const short = tool.name.includes('__') ? tool.name.slice(tool.name.indexOf('__') + 2) : tool.name;
    const spoken = [tool.name, short, short.replace(/[-_]+/g, ' ')].map((name) => name.toLowerCase());
    const mention = spoken.find((name) => text.includes(name));
    if (mention === undefined) continue;
    const rest = question.slice(text.indexOf(mention) + mention.length).replace(/^[\s:,]+/, '').trim();
    return { name: tool.name, arguments: demoArguments(tool.parameters, rest || question) };
  }
  return undefined;
}

/** Arguments from a JSON schema: quoted text or the rest of the message for strings, numbers in order. */
function demoArguments(schema: Record<string, unknown>, text: string): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, { type?: string; enum?: unknown[]; default?: unknown }>;
  const required = new Set((schema.required ?? []) as string[]);
  const quoted = /"([^"]+)"|“([^”]+)”/.exec(text);
  const numbers = (text.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
  const args: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(properties)) {
    if (!required.has(key) && property.default !== undefined) continue;
    if (property.enum?.length) args[key] = property.enum[0];
    else if (property.type === 'number' || property.type === 'integer') {
      if (numbers.length) args[key] = numbers.shift();
      else if (required.has(key)) args[key] = 1;
    } else if (property.type === 'boolean') args[key] = true;
    else if (property.type === 'string' || property.type === undefined) args[key] = quoted?.[1] ?? quoted?.[2] ?? text;
  }
  return args;
}

/** What is still to be done, in the order the demo does it. */
function pending(situation: Situation): Next | undefined {
  const { expression, wantsTime, ambiguous, results, clarification, file, wantsFileList, named } = situation;
  if (expression && situation.calculations.length < Math.max(1, situation.chain.length)) return 'calculator';
  if (wantsTime && !results.has('current_time')) return 'current_time';
  if (file && !results.has('read_file')) return 'read_file';
  if (wantsFileList && !results.has('list_files')) return 'list_files';
  if (named && !results.has(named.name)) return 'named';
  if (ambiguous && clarification === undefined) return 'request_input';
  return undefined;
}

function reasonReply(situation: Situation): string {
  const next = pending(situation);
  const missing = unavailable(situation, next);
  if (missing) {
    const plan = `The ${missing} tool is needed but not enabled for this run, so say so instead of trying.`;
    return `The user wrote: "${shorten(situation.question)}". ${plan}\n\n\`\`\`json\n${JSON.stringify({ plan, tools_to_consider: [], finish: true })}\n\`\`\``;
  }
  const link = situation.chain[situation.calculations.length];
  const plans: Record<Next, string> = {
    calculator:
      situation.calculations.length > 0 && link
        ? `The running value is ${situation.calculations.at(-1)}; next, ${link.words}: evaluate ${situation.expression} with the calculator.`
        : `Evaluate ${situation.expression} with the calculator.`,
    current_time: 'Read the current time with the current_time tool.',
    read_file: `Read the file ${situation.file} with read_file.`,
    list_files: 'See which files this session has with list_files.',
    named: `Call ${situation.named?.name} as the user asked.`,
    request_input: 'The request is too vague to act on, so ask the user what exactly they need.',
  };
  const plan = next ? plans[next] : 'Everything needed is known, so answer directly.';
  const toolName = next === 'named' ? situation.named!.name : next;
  const intro = next
    ? `The user wrote: "${shorten(situation.question)}". ${plan}`
    : `I have what I need to answer "${shorten(situation.question)}".`;
  return `${intro}\n\n\`\`\`json\n${JSON.stringify({ plan, tools_to_consider: toolName ? [toolName] : [], finish: !next })}\n\`\`\``;
}

function actReply(situation: Situation): CompletionResult {
  const next = pending(situation);
  const name = next === 'named' ? situation.named!.name : next;
  if (!next || !name || (next !== 'request_input' && !situation.offered.has(name))) {
    return { text: next ? `The ${name} tool is not enabled for this run.` : 'No tool is needed.', toolCalls: [] };
  }
  const args: Record<Next, unknown> = {
    calculator: { expression: situation.expression },
    current_time: {},
    read_file: { name: situation.file },
    list_files: {},
    named: situation.named?.arguments ?? {},
    request_input: {
      question: `Could you tell me a bit more about what you need with "${shorten(situation.question)}"? For example, a calculation I should do.`,
    },
  };
  const call: LlmToolCall = { id: `call_demo_${name.replace(/[^A-Za-z0-9_-]/g, '_')}`, name, arguments: JSON.stringify(args[next]) };
  return { text: '', toolCalls: [call] };
}

function observeReply(situation: Situation): string {
  const { results, expression } = situation;
  const findings: string[] = [];
  const answers: string[] = [];
  const calculation = situation.calculations.at(-1);
  if (calculation !== undefined) {
    const failed = calculation.startsWith('Error:');
    const done = situation.calculations.length;
    const evaluated = done > 1 ? linkExpression(situation.chain, situation.calculations, done - 1) : (situation.chain[0]?.expression ?? expression);
    findings.push(failed ? `The calculator could not evaluate ${evaluated} (${calculation}).` : `${evaluated} = ${calculation}.`);
    if (failed) answers.push(`I could not evaluate \`${evaluated}\`: ${calculation.replace(/^Error:\s*/, '')}`);
    else if (situation.chain.length > 1) answers.push(chainAnswer(situation));
    else answers.push(`\`${evaluated}\` = **${calculation}**`);
  }
  const time = results.get('current_time');
  if (time !== undefined) {
    findings.push(`The clock says ${time}.`);
    answers.push(`It is now **${time}** (UTC).`);
  }
  const read = results.get('read_file');
  if (read !== undefined && !read.startsWith('Error:')) {
    findings.push(`I read ${situation.file ?? 'the file'}.`);
    answers.push(summarize(situation.file ?? 'the file', read));
  }
  if (situation.missingFile) {
    findings.push(`There is no file ${situation.missingFile} in this chat.`);
    answers.push(`I could not summarize **${situation.missingFile}**: this chat has no such file. Attach it with the paperclip (or drop it on the page) and ask again.`);
  }
  for (const [tool, label] of [
    ...(read !== undefined && read.startsWith('Error:') ? [['read_file', 'The file says']] : []),
    ['list_files', 'The session has these files'],
    ...(situation.named ? [[situation.named.name, `${situation.named.name} returned`]] : []),
  ] as const) {
    const result = results.get(tool);
    if (result === undefined) continue;
    const failed = result.startsWith('Error:');
    findings.push(failed ? `${tool} failed (${shorten(result)}).` : `${label}: ${shorten(result)}`);
    answers.push(failed ? `\`${tool}\` failed: ${result.replace(/^Error:\s*/, '')}` : `${label}:\n\n\`\`\`\n${result.slice(0, 2_000)}\n\`\`\``);
  }
  if (situation.clarification !== undefined) findings.push(`The user clarified: "${shorten(situation.clarification)}".`);
  const unfinished = pending(situation);
  const missing = unavailable(situation, unfinished);
  if (missing) {
    const observation = `The ${missing} tool is not enabled for this run.`;
    const answer = [
      ...answers,
      `The **${missing}** tool is not enabled for this run; tick it under Tools to let me ${missing === 'calculator' && situation.expression ? `compute ${situation.expression}` : 'do this'}.`,
    ].join('\n\n');
    return block(observation, { observation, should_continue: false, final_answer: answer });
  }
  if (unfinished && unfinished !== 'request_input') {
    const link = situation.chain[situation.calculations.length];
    const next = unfinished === 'calculator' && link ? `Next, ${link.words}.` : `Next I need the ${unfinished} tool.`;
    const observation = `${findings.join(' ')} ${next}`.trim();
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
    'What I can do: arithmetic with the calculator (try "What is (17+25)*3?" in agent mode), tell the time, read an attached file ("summarize notes.txt"), call a tool you name (tick it first), and ask you when a request is unclear.',
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


/** The tool the next step needs when this run may not use it (the user did not tick it). */
function unavailable(situation: Situation, next: Next | undefined): string | undefined {
  if (!next || next === 'request_input' || next === 'named') return undefined;
  return situation.tools.has(next) ? undefined : next;
}

const OPERATIONS: { pattern: RegExp; operator: ChainLink['operator'] }[] = [
  { pattern: /\b(?:add|plus)\s+(-?\d+(?:\.\d+)?)/i, operator: '+' },
  { pattern: /\b(?:subtract|minus|take away)\s+(-?\d+(?:\.\d+)?)/i, operator: '-' },
  { pattern: /\b(?:multiply|times)(?:\s+(?:it|that|the result))?(?:\s+by)?\s+(-?\d+(?:\.\d+)?)/i, operator: '*' },
  { pattern: /\b(?:divide|divided)(?:\s+(?:it|that|the result))?(?:\s+by)?\s+(-?\d+(?:\.\d+)?)/i, operator: '/' },
];

/**
 * A chained calculation: "First compute 12*7, then add 15, divide by 3, subtract 4" is an
 * expression followed by operations on the running value, each one calculator call of its own.
 */
export function findChain(text: string): ChainLink[] {
  const parts = text.split(/,|;|\bthen\b|\band\b/i).map((part) => part.trim()).filter(Boolean);
  const chain: ChainLink[] = [];
  for (const part of parts) {
    if (chain.length === 0) {
      const expression = findExpression(part);
      if (expression) chain.push({ expression, words: part });
      continue;
    }
    const operation = OPERATIONS.map(({ pattern, operator }) => ({ match: pattern.exec(part), operator })).find(({ match }) => match);
    if (operation?.match) chain.push({ operator: operation.operator!, operand: operation.match[1]!, words: part.replace(/^(?:then|and)\s+/i, '') });
  }
  if (chain.length > 1) return chain;
  const whole = findExpression(text);
  return whole ? [{ expression: whole, words: whole }] : [];
}

/** The expression of link `index`, applied to the running value the calculator gave for the one before. */
function linkExpression(chain: ChainLink[], calculations: string[], index: number): string | undefined {
  const link = chain[index];
  if (!link) return undefined;
  if (link.expression) return link.expression;
  return `${calculations[index - 1]} ${link.operator} ${link.operand}`;
}

/** The next expression to evaluate: the chain's next link, or the last one when it is done. */
function nextExpression(chain: ChainLink[], calculations: string[]): string | undefined {
  if (chain.length === 0) return undefined;
  const index = Math.min(calculations.length, chain.length - 1);
  return linkExpression(chain, calculations, index);
}

/** Every step of a chained calculation with its result, then the result in bold. */
function chainAnswer(situation: Situation): string {
  const lines = situation.chain.map((_, index) => `${index + 1}. \`${linkExpression(situation.chain, situation.calculations, index)}\` = ${situation.calculations[index]}`);
  return `${lines.join('\n')}\n\nThe result is **${situation.calculations.at(-1)}**.`;
}

/** A real summary of a text file: its size in lines and words, its headings, its first sentences. */
function summarize(name: string, result: string): string {
  // The tool's result starts with a header line ("notes.txt: bytes 0-120 of 120") and may end with a note on what is left.
  const text = result.replace(/^[^\n]*: bytes \d+-\d+ of \d+\n/, '').replace(/\n\[\d+ more bytes: read_file with offset \d+\]$/, '');
  const lines = text.split('\n').filter((line) => line.trim());
  const words = text.split(/\s+/).filter(Boolean).length;
  const headings = lines.filter((line) => /^#{1,6}\s/.test(line)).map((line) => line.replace(/^#+\s*/, ''));
  const prose = lines.filter((line) => !/^#{1,6}\s/.test(line)).join(' ');
  const sentences = (prose.match(/[^.!?]+[.!?]+/g) ?? [prose]).map((sentence) => sentence.trim()).filter(Boolean).slice(0, 2);
  const parts = [`**${name}**: ${lines.length} line${lines.length === 1 ? '' : 's'}, ${words} word${words === 1 ? '' : 's'}.`];
  if (headings.length) parts.push(`Sections: ${headings.slice(0, 8).join('; ')}.`);
  if (sentences.length) parts.push(`It begins: ${sentences.join(' ')}`);
  return parts.join('\n\n');
}
