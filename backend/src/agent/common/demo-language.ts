import type { CompletionRequest, LlmToolCall } from '../../llm/llm-client.ts';
import { evaluateExpression } from '../../tools/expression.ts';
import { spoken, unresolvedAnswer } from '../kernel/grounding.ts';

/**
 * The demo model's understanding of a request, shared by every strategy's demo responder: the
 * arithmetic in it (chained too), the time, a session file, a named tool, a vague request, and
 * the tool results a run has so far. Deterministic and offline.
 */

export const SETUP_HINT = 'To use a real model, set `OPENAI_BASE_URL` (and `OPENAI_API_KEY` if the endpoint needs one) and restart Stepwise.';

/** What the demo model reads from a conversation: the request and the results it already has. */
export interface Situation {
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
  /** The message speaks of "this file" (the attached one) and the chat has none. */
  noAttachment: boolean;
  /** A file the user asks to have written ("Write 'hello' to out.txt"): its name and text. */
  write: { name: string; content: string } | undefined;
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

export type Next = 'calculator' | 'current_time' | 'read_file' | 'list_files' | 'write_file' | 'named' | 'request_input';
export const BUILT_IN_PLANS = new Set(['calculator', 'current_time', 'read_file', 'list_files', 'write_file', 'request_input']);

/** Reads what the demo model needs from one call: the request, the results so far, the tools. */
export function readSituation(request: CompletionRequest): Situation {
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
  // "pages 12-14" names pages of a file, not a subtraction.
  const chain = findChain(fullRequest.replace(PAGE_REFERENCE, ' '));
  const expression = nextExpression(chain, calculations);
  const wantsTime = /\b(time|date|today|clock)\b/i.test(fullRequest);
  const words = question.trim().split(/\s+/).filter(Boolean);
  const vague = /\b(something|anything|stuff|it|this|that|help)\b/i.test(question);
  const tools = availableTools(request);
  const toolNames = new Set(tools.map((tool) => tool.name));
  const write = writeRequest(question);
  // The file a write names is the one to write, not one to read.
  const named_file = write ? undefined : /\b([\w-]+(?:\.[\w-]+)*\.(?:txt|md|csv|json|log|pdf|docx?|html?|xml|ya?ml))\b/i.exec(question)?.[1];
  // A file already read is the one asked about, whatever this call's variables list: never "missing".
  const read = results.get('read_file');
  const attached = ATTACHED_FILE.test(question) && !named_file && !write;
  const file = write
    ? undefined
    : ((toolNames.has('read_file') ? requestedFile(request, question) : undefined) ??
      (read !== undefined && !read.startsWith('Error:') ? (named_file ?? readFileName(request)) : undefined));
  // Missing when the call knows the session's files (its manifest) or offers no tools to look with.
  const knowsFiles = typeof request.variables?.files_manifest === 'string';
  const missingFile = named_file && !file && read === undefined && (request.tools === undefined || knowsFiles) ? named_file : undefined;
  // Without the manifest (a call that is not given it), a run that never read the file it was asked about had none to read.
  const noAttachment = attached && !file && read === undefined && (!knowsFiles || manifestFiles(request).every(({ name }) => AGENT_FILES.test(name)));
  const wantsFileList = toolNames.has('list_files') && /\b(files?|attachments?|attached)\b/i.test(question) && !file && !attached && !write;
  const named = namedTool(question, tools);
  return {
    question,
    request: fullRequest,
    expression,
    chain,
    calculations,
    wantsTime,
    ambiguous:
      !expression &&
      !wantsTime &&
      !file &&
      !missingFile &&
      !noAttachment &&
      !wantsFileList &&
      !write &&
      !named &&
      (words.length <= 3 || (vague && words.length <= 6)),
    missingFile,
    noAttachment,
    results,
    clarification,
    offered: new Set((request.tools ?? []).map((tool) => tool.name)),
    tools: toolNames,
    file,
    wantsFileList,
    write,
    named,
  };
}

/** "Write 'hello' to out.txt", "save “notes” in a.md", "create a file out.txt with 'hello'": the file and its text. */
function writeRequest(question: string): Situation['write'] {
  const quoted = `["'“‘]([^"'”’]+)["'”’]`;
  const file = '([\\w.-]+\\.[A-Za-z0-9]+)';
  const into = new RegExp(
    `\\b(?:write|save|put|store)\\s+${quoted}\\s+(?:to|into|in)\\s+(?:(?:a\\s+|the\\s+)?file\\s+(?:called\\s+|named\\s+)?)?${file}`,
    'i',
  ).exec(question);
  if (into) return { name: into[2]!.replace(/[.]$/, ''), content: into[1]! };
  const create = new RegExp(
    `\\b(?:create|make|write)\\s+(?:a\\s+)?file\\s+(?:called\\s+|named\\s+)?${file}\\s+(?:with|containing|that says|saying)\\s+${quoted}`,
    'i',
  ).exec(question);
  if (create) return { name: create[1]!, content: create[2]! };
  return undefined;
}

/**
 * A session file the question names, from the files the prompt was given (its `files_manifest`
 * variable: one "- NAME (SIZE)" line a file).
 */
function requestedFile(request: CompletionRequest, question: string): string | undefined {
  const listed = manifestFiles(request);
  const named = [...listed]
    .map(({ name }) => name)
    .sort((a, b) => b.length - a.length)
    .find((name) => question.includes(name));
  if (named || !ATTACHED_FILE.test(question)) return named;
  // "This file", "the attached file": the person's newest file (files the strategies keep are not theirs).
  const theirs = listed.filter(({ name }) => !AGENT_FILES.test(name));
  return (theirs.find((file) => file.newest) ?? theirs.at(-1))?.name;
}

/** How the demo says that the chat has no file for "this file". */
export const NO_ATTACHMENT = 'No file is attached to this chat';

/** "this file", "the attached file", "my document", "the attachment": the file attached to the chat. */
const ATTACHED_FILE =
  /\b(?:(?:this|that|the|my|our|attached|uploaded)\s+(?:attached\s+|uploaded\s+|text\s+)?(?:file|document|doc|attachment|upload)|attachment|what I (?:attached|uploaded))\b/i;

/** Files the strategies keep in a chat (research's state and report, its tasks' outputs). */
const AGENT_FILES = /^(?:RESEARCH_STATE\.md|final_report\.md|final_output\.md|task-[\w.]+\.json|figures\.md)$/;

/** The files the prompt was given (its `files_manifest` variable: one "- NAME (SIZE)" line a file, the newest marked). */
function manifestFiles(request: CompletionRequest): Array<{ name: string; newest: boolean }> {
  const manifest = typeof request.variables?.files_manifest === 'string' ? request.variables.files_manifest : '';
  return [...manifest.matchAll(/^- (.+) \([\d.]+ [KM]?B(, newest)?\)$/gm)].map((match) => ({ name: match[1]!, newest: match[2] !== undefined }));
}

/** The file a read_file call of this conversation named. */
function readFileName(request: CompletionRequest): string | undefined {
  for (const message of request.messages) {
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls ?? []) {
      if (call.name !== 'read_file') continue;
      try {
        const name = (JSON.parse(call.arguments) as { name?: unknown }).name;
        if (typeof name === 'string') return name;
      } catch {
        // Not the demo's call: no name to read.
      }
    }
  }
  return undefined;
}

/** The tools this call may use: those it offers, else the run's (the prompt's `tool_names` variable). */
function availableTools(request: CompletionRequest): Array<{ name: string; parameters: Record<string, unknown> }> {
  if (request.tools) return request.tools;
  const names = request.variables?.tool_names;
  return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string').map((name) => ({ name, parameters: {} })) : [];
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
    const rest = question
      .slice(text.indexOf(mention) + mention.length)
      .replace(/^[\s:,]+/, '')
      .trim();
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
export function pending(situation: Situation): Next | undefined {
  const { expression, wantsTime, ambiguous, results, clarification, file, wantsFileList, named } = situation;
  // A calculation that failed is not gone on with: the chain's next link would start from an error.
  const failed = situation.calculations.at(-1)?.startsWith('Error:') ?? false;
  if (expression && !failed && situation.calculations.length < Math.max(1, situation.chain.length)) return 'calculator';
  if (wantsTime && !results.has('current_time')) return 'current_time';
  if (file && !results.has('read_file')) return 'read_file';
  if (wantsFileList && !results.has('list_files')) return 'list_files';
  if (situation.write && !results.has('write_file')) return 'write_file';
  if (named && !results.has(named.name)) return 'named';
  if (ambiguous && clarification === undefined) return 'request_input';
  return undefined;
}

/** What the demo model says of a request it cannot do: what it understood, what it can do, how to ask, and that a real model is needed. Marked unresolved. */
export function fallbackAnswer(situation: Situation): string {
  const about = situation.clarification ?? situation.question;
  return unresolvedAnswer(
    `The offline demo model found nothing it can do in "${shorten(about)}".`,
    [
      `I read "${shorten(about)}" as an open question: I found no calculation in it, no file of this chat, no tool you named, and no question about the time.`,
      'What I can do: arithmetic with the calculator ("What is (17+25)*3?", "15% of 240, then add 7", "12 times 7"), tell the time, read and summarize a file attached to this chat ("Summarize this file" or "summarize notes.txt"), write a file ("Write \'hello\' to out.txt"), call a tool you name (tick it first), and ask you when a request is unclear.',
      `Anything else needs a real model. ${SETUP_HINT}`,
    ].join('\n\n'),
  );
}

/**
 * The answer from what the tools returned: every part found, or (marked unresolved) what could
 * not be done first, when anything could not; the fallback when nothing was found.
 */
export function answerOf(situation: Situation, extra: { answers?: string[]; problems?: string[] } = {}): string {
  const found = findingsOf(situation);
  const answers = [...found.answers, ...(extra.answers ?? [])];
  const problems = [...found.problems, ...(extra.problems ?? [])];
  if (problems.length > 0) return unresolvedAnswer(problems[0]!, answers.join('\n\n'));
  if (answers.length > 0) return answers.join('\n\n');
  return fallbackAnswer(situation);
}

/** The sentence saying a needed tool is not enabled, and how to enable it. */
export function notEnabledProblem(tool: string): string {
  return `The ${spoken(tool)} tool is needed but not enabled for this run; tick it under Tools and ask again.`;
}

export function block(prose: string, control: object): string {
  return `${prose}\n\n\`\`\`json\n${JSON.stringify(control)}\n\`\`\``;
}

const EXPRESSION_PART = /(?:\b(?:sqrt|abs|sin|cos|tan|ln|log|exp|floor|ceil|round|min|max|pow|pi)\b|\d+(?:\.\d+)?|[-+*/%^×÷(),]|\s)+/gi;

const NUMBER_WORDS: Record<string, string> = {
  zero: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  ten: '10',
  eleven: '11',
  twelve: '12',
  thirteen: '13',
  fourteen: '14',
  fifteen: '15',
  sixteen: '16',
  seventeen: '17',
  eighteen: '18',
  nineteen: '19',
  twenty: '20',
  thirty: '30',
  forty: '40',
  fifty: '50',
  sixty: '60',
  seventy: '70',
  eighty: '80',
  ninety: '90',
  hundred: '100',
  thousand: '1000',
};
const N = '(-?\\d+(?:\\.\\d+)?)';
/** Between two operands: after a number or a closing parenthesis, before a number or an opening one. */
const between = (words: string) => new RegExp(`(?<=[\\d)])\\s*\\b(?:${words})\\b\\s*(?=[-\\d(])`, 'gi');

/**
 * Arithmetic as people write it, in symbols: percentages ("15% of 240"), operations in words
 * ("12 times 7", "divide 10 by 4", "the sum of 3 and 4", "square root of 16"), numbers in words
 * next to them ("seven times eight").
 */
export function arithmeticOf(text: string): string {
  let out = text.replace(/[×]/g, '*').replace(/[÷]/g, '/');
  const words = Object.keys(NUMBER_WORDS).join('|');
  const operation =
    'times|plus|minus|divided|multiplied|over|percent|squared|cubed|power|root|sum|product|difference|add|subtract|multiply|divide|by|and|of|from|to';
  // Numbers in words only where they are operands: next to an operation word or a symbol.
  out = out.replace(
    new RegExp(`\\b(${words})\\b(?=\\s*(?:[-+*/^%]|\\b(?:${operation})\\b))|(?<=(?:[-+*/^%(]|\\b(?:${operation})\\b)\\s*)\\b(${words})\\b`, 'gi'),
    (match) => NUMBER_WORDS[match.toLowerCase()] ?? match,
  );
  const rules: Array<[RegExp, string]> = [
    [new RegExp(`${N}\\s*(?:%|\\s+percent|\\s+per\\s*cent)\\s+of\\s+${N}`, 'gi'), '($1*$2/100)'],
    [new RegExp(`\\bsquare\\s+root\\s+of\\s+${N}`, 'gi'), 'sqrt($1)'],
    [new RegExp(`\\b(?:the\\s+)?sum\\s+of\\s+${N}\\s+and\\s+${N}`, 'gi'), '($1+$2)'],
    [new RegExp(`\\b(?:the\\s+)?product\\s+of\\s+${N}\\s+and\\s+${N}`, 'gi'), '($1*$2)'],
    [new RegExp(`\\b(?:the\\s+)?difference\\s+between\\s+${N}\\s+and\\s+${N}`, 'gi'), '($1-$2)'],
    [new RegExp(`\\bmultiply\\s+${N}\\s+(?:by|and|with)\\s+${N}`, 'gi'), '($1*$2)'],
    [new RegExp(`\\bdivide\\s+${N}\\s+by\\s+${N}`, 'gi'), '($1/$2)'],
    [new RegExp(`\\badd\\s+${N}\\s+(?:and|to)\\s+${N}`, 'gi'), '($1+$2)'],
    [new RegExp(`\\bsubtract\\s+${N}\\s+from\\s+${N}`, 'gi'), '($2-$1)'],
    [new RegExp(`${N}\\s+squared\\b`, 'gi'), '$1^2'],
    [new RegExp(`${N}\\s+cubed\\b`, 'gi'), '$1^3'],
    [between('times|multiplied\\s+by|x'), ' * '],
    [between('divided\\s+by|over'), ' / '],
    [between('plus'), ' + '],
    [between('minus'), ' - '],
    [between('to\\s+the\\s+power\\s+of|raised\\s+to(?:\\s+the\\s+power\\s+of)?'), ' ^ '],
  ];
  for (const [pattern, replacement] of rules) out = out.replace(pattern, replacement);
  return out;
}

/** The longest run of the text that looks like arithmetic: digits with at least one operator or function. */
export function findExpression(raw: string): string | undefined {
  const text = arithmeticOf(raw);
  const candidates = (text.match(EXPRESSION_PART) ?? [])
    .map((candidate) =>
      candidate
        .trim()
        .replace(/^[,)]+|[,(]+$/g, '')
        .trim(),
    )
    .filter((candidate) => /\d/.test(candidate) && /[-+*/%^×÷]|[a-z]\(/i.test(candidate) && !/^[-+]?\d+(\.\d+)?$/.test(candidate));
  return candidates.sort((a, b) => b.length - a.length)[0];
}

export function shorten(text: string, max = 80): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

function findLastIndex<T>(items: T[], predicate: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) if (predicate(items[index]!)) return index;
  return -1;
}

/** The tool the next step needs when this run may not use it (the user did not tick it). */
export function unavailable(situation: Situation, next: Next | undefined): string | undefined {
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
export function findChain(raw: string): ChainLink[] {
  const text = arithmeticOf(raw);
  const parts = text
    .split(/,|;|\bthen\b|\band\b/i)
    .map((part) => part.trim())
    .filter(Boolean);
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

/** A whole chain as one expression: "First compute 12*7, then add 15, divide by 3" is `((12*7) + 15) / 3`. */
export function chainExpression(chain: ChainLink[]): string | undefined {
  const [first, ...rest] = chain;
  if (!first?.expression) return undefined;
  let expression = first.expression;
  for (const link of rest) expression = `(${expression}) ${link.operator} ${link.operand}`;
  return expression;
}

/** The chain's result, computed here (as the calculator computes it): the demo model checks an answer against it, never guesses. */
export function chainResult(chain: ChainLink[]): string | undefined {
  const expression = chainExpression(chain);
  if (!expression) return undefined;
  try {
    return String(evaluateExpression(expression));
  } catch {
    return undefined;
  }
}

/** The expression of link `index`, applied to the running value the calculator gave for the one before. */
export function linkExpression(chain: ChainLink[], calculations: string[], index: number): string | undefined {
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
export function chainAnswer(situation: Situation): string {
  const lines = situation.chain.map(
    (_, index) => `${index + 1}. \`${linkExpression(situation.chain, situation.calculations, index)}\` = ${situation.calculations[index]}`,
  );
  return `${lines.join('\n')}\n\nThe result is **${situation.calculations.at(-1)}**.`;
}

/**
 * read_file's result of a text file: its header line ("notes.txt: bytes 0-120 of 120, 3 lines in
 * all") read for the file's line count, and a note on what is left ("[N more bytes: …]") for
 * whether the text is the whole file.
 */
function readResult(result: string): { total: number | undefined; partial: boolean; text: string } {
  const header = /^[^\n]*: bytes \d+-\d+ of (\d+)(?:, (\d+) lines? in all)?\n/.exec(result);
  const rest = /\n\[\d+ more bytes: read_file with offset \d+\]$/;
  const body = result.slice(header?.[0].length ?? 0);
  return { total: header?.[2] === undefined ? undefined : Number(header[2]), partial: rest.test(body), text: body.replace(rest, '') };
}

/** A file's size as one phrase, from read_file's result: "3000 lines in all, 2100 words read" or "3 lines, 12 words". */
function sizeOf(result: string): string {
  const { total, partial, text } = readResult(result);
  const words = text.split(/\s+/).filter(Boolean).length;
  const lines = total ?? text.split('\n').filter((line) => line.trim()).length;
  return partial ? `${lines} lines in all, of which I read ${words} words` : `${lines} line${lines === 1 ? '' : 's'}, ${words} word${words === 1 ? '' : 's'}`;
}

/** "page 4", "pages 3-5", "pages 3 to 5". */
const PAGE_REFERENCE = /\bpages?\s+\d+(?:\s*(?:-|–|to)\s*\d+)?/gi;

/** The pages a question asks of a PDF ("pages 3-5 of report.pdf", "page 4"), as read_file's `pages`. */
function pagesAsked(situation: Situation): { pages?: string } {
  if (!situation.file?.toLowerCase().endsWith('.pdf')) return {};
  const match = /\bpages?\s+(\d+)(?:\s*(?:-|–|to)\s*(\d+))?/i.exec(situation.question);
  return match ? { pages: match[2] ? `${match[1]}-${match[2]}` : match[1]! } : {};
}

/** A real summary of a PDF's pages as read_file gave them: its pages and words, the pages read, their first lines. */
function summarizePdf(name: string, header: RegExpExecArray, result: string): string {
  const [first, last, total, words] = header.slice(1, 5).map(Number) as [number, number, number, number];
  const body = result.slice(header[0].length).replace(/(\n\[[^\n]*\])+$/, '');
  const text = body.replace(/^--- page \d+ ---$/gm, '');
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && line !== '(no text on this page)');
  const readWords = text.split(/\s+/).filter(Boolean).length;
  const whole = first === 1 && last === total;
  const pages = (count: number) => `${count} page${count === 1 ? '' : 's'}`;
  const parts = [
    whole
      ? `**${name}**: a PDF of ${pages(total)}, ${words} word${words === 1 ? '' : 's'}.`
      : `**${name}**: a PDF of ${pages(total)} (${words} words in all); I read ${first === last ? `page ${first}` : `pages ${first}-${last}`} (${readWords} words), and summarize those.`,
  ];
  if (lines.length)
    parts.push(
      `${first === 1 ? 'It begins' : `Page ${first} begins`}:\n\n${lines
        .slice(0, 3)
        .map((line) => `> ${line}`)
        .join('\n')}`,
    );
  else parts.push('Those pages hold no text (a scanned PDF holds pictures of pages, which I cannot read).');
  return parts.join('\n\n');
}

/** A real summary of a text file: its size in lines and words, its headings, its first sentences. */
export function summarize(name: string, result: string): string {
  const pdf = /^[^\n]*: pages (\d+)-(\d+) of (\d+), (\d+) words in all\n/.exec(result);
  if (pdf) return summarizePdf(name, pdf, result);
  const { total, partial, text } = readResult(result);
  const lines = text.split('\n').filter((line) => line.trim());
  const words = text.split(/\s+/).filter(Boolean).length;
  const headings = lines.filter((line) => /^#{1,6}\s/.test(line)).map((line) => line.replace(/^#+\s*/, ''));
  const prose = lines.filter((line) => !/^#{1,6}\s/.test(line)).join(' ');
  const sentences = (prose.match(/[^.!?]+[.!?]+/g) ?? [prose])
    .map((sentence) => sentence.trim())
    .filter(Boolean)
    .slice(0, 2);
  const count = total ?? lines.length;
  const parts = [
    partial
      ? `**${name}**: ${count} line${count === 1 ? '' : 's'} in all; I read the first ${text.split('\n').length - 1} of them (${words} words), and summarize those.`
      : `**${name}**: ${count} line${count === 1 ? '' : 's'}, ${words} word${words === 1 ? '' : 's'}.`,
  ];
  if (headings.length) parts.push(`Sections: ${headings.slice(0, 8).join('; ')}.`);
  if (sentences.length) parts.push(`It begins: ${sentences.join(' ')}`);
  return parts.join('\n\n');
}

/** One part of a request, in the order the demo does them: its title (a to-do, a plan step) and whether it is done. */
export interface RequestPart {
  kind: Next | 'missing_file';
  title: string;
  done: boolean;
  /** What doing it found, once done. */
  finding?: string;
}

/**
 * The parts of a request (every link of a calculation, the time, a file, a file that is missing,
 * a named tool), in the order nextToolCall does them: autonomous writes a to-do for each, and
 * plan_execute plans a step for each.
 */
export function requestParts(situation: Situation): RequestPart[] {
  const { chain, calculations, results } = situation;
  const parts: RequestPart[] = [];
  const calculated = (index: number) =>
    calculations[index] === undefined ? undefined : `\`${linkExpression(chain, calculations, index)}\` = ${calculations[index]}`;
  if (chain.length > 1) {
    chain.forEach((link, index) => {
      const title = index === 0 ? `Compute ${link.expression}` : `${link.words.charAt(0).toUpperCase()}${link.words.slice(1)}`;
      parts.push({ kind: 'calculator', title, done: calculations.length > index, finding: calculated(index) });
    });
  } else if (situation.expression) {
    parts.push({ kind: 'calculator', title: `Work out ${situation.expression}`, done: calculations.length > 0, finding: calculated(0) });
  }
  if (situation.wantsTime)
    parts.push({
      kind: 'current_time',
      title: 'Read the current time',
      done: results.has('current_time'),
      finding: results.has('current_time') ? `The clock says ${results.get('current_time')}.` : undefined,
    });
  if (situation.file)
    parts.push({ kind: 'read_file', title: `Read and summarize ${situation.file}`, done: results.has('read_file'), finding: `I read ${situation.file}.` });
  else if (situation.missingFile)
    parts.push({
      kind: 'missing_file',
      title: `Look for ${situation.missingFile}`,
      done: true,
      finding: `There is no file ${situation.missingFile} in this chat.`,
    });
  else if (situation.noAttachment) parts.push({ kind: 'missing_file', title: 'Look for the attached file', done: true, finding: `${NO_ATTACHMENT}.` });
  if (situation.wantsFileList)
    parts.push({ kind: 'list_files', title: 'List the chat’s files', done: results.has('list_files'), finding: 'I listed the files.' });
  if (situation.write)
    parts.push({
      kind: 'write_file',
      title: `Write ${situation.write.name}`,
      done: results.has('write_file'),
      finding: results.get('write_file'),
    });
  if (situation.named)
    parts.push({ kind: 'named', title: `Call ${situation.named.name}`, done: results.has(situation.named.name), finding: `${situation.named.name} answered.` });
  return parts;
}

/**
 * The tool call the request needs next (the same in every strategy): the calculator for the next
 * link of a calculation, the clock, a file, a tool the user named, or a question when the request
 * is vague; `notEnabled` names a needed tool this run may not use.
 */
export function nextToolCall(situation: Situation): { next: Next | undefined; call?: LlmToolCall; notEnabled?: string } {
  const next = pending(situation);
  const name = next === 'named' ? situation.named!.name : next;
  if (!next || !name) return { next };
  if (next !== 'request_input' && !situation.offered.has(name)) return { next, notEnabled: name };
  const args: Record<Next, unknown> = {
    calculator: { expression: situation.expression },
    current_time: {},
    read_file: { name: situation.file, ...pagesAsked(situation) },
    list_files: {},
    write_file: situation.write ?? {},
    named: situation.named?.arguments ?? {},
    request_input: {
      question: `Could you tell me a bit more about what you need with "${shorten(situation.question)}"? For example, a calculation I should do.`,
    },
  };
  return { next, call: { id: `call_demo_${name.replace(/[^A-Za-z0-9_-]/g, '_')}`, name, arguments: JSON.stringify(args[next]) } };
}

/**
 * What the results so far say (a line each, for an observation) and the answer's parts (a
 * calculation step by step, the time, a file's real summary, a missing file said plainly, other
 * tools' results): every strategy's demo answers from these, so they all answer alike.
 */
export function findingsOf(situation: Situation): { findings: string[]; answers: string[]; problems: string[] } {
  const { results, expression } = situation;
  const findings: string[] = [];
  const answers: string[] = [];
  // What could not be done, a sentence each: an answer that rests on any of these is unresolved.
  const problems: string[] = [];
  const calculation = situation.calculations.at(-1);
  if (calculation !== undefined) {
    const failed = calculation.startsWith('Error:');
    const done = situation.calculations.length;
    const evaluated = done > 1 ? linkExpression(situation.chain, situation.calculations, done - 1) : (situation.chain[0]?.expression ?? expression);
    const error = calculation.replace(/^Error:\s*/, '');
    findings.push(failed ? `The calculator could not evaluate ${evaluated} (${error}).` : `${evaluated} = ${calculation}.`);
    if (failed) problems.push(`The calculator could not evaluate ${evaluated}: ${error.replace(/\.$/, '')}.`);
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
    findings.push(`I read ${situation.file ?? 'the file'}: ${sizeOf(read)}.`);
    answers.push(summarize(situation.file ?? 'the file', read));
  }
  if (situation.missingFile) {
    findings.push(`There is no file ${situation.missingFile} in this chat.`);
    problems.push(`There is no file ${situation.missingFile} in this chat to read.`);
    answers.push(`Attach **${situation.missingFile}** with the paperclip (or drop it on the page) and ask again.`);
  }
  if (situation.noAttachment) {
    findings.push(`${NO_ATTACHMENT}.`);
    problems.push(`${NO_ATTACHMENT}, so there is nothing to read.`);
    answers.push('Attach the file with the paperclip (or drop it on the page) and ask again; or name it ("summarize notes.txt").');
  }
  const wrote = results.get('write_file');
  if (wrote !== undefined && situation.write) {
    // A denied approval reaches the model as the person's words, not as an error.
    const failed = !wrote.startsWith('Wrote ');
    findings.push(failed ? `${situation.write.name} was not written (${shorten(wrote.replace(/^Error:\s*/, ''))}).` : `${wrote}.`);
    if (failed) problems.push(`${situation.write.name} was not written: ${shorten(wrote.replace(/^Error:\s*/, ''), 160).replace(/\.$/, '')}.`);
    else answers.push(`I wrote **${situation.write.name}** (${wrote.replace(/^Wrote \S+ /, '').replace(/[()]/g, '')}); it is among this chat's files.`);
  }
  for (const [tool, label] of [
    ...(read?.startsWith('Error:') ? [['read_file', 'The file says']] : []),
    ['list_files', 'The session has these files'],
    ...(situation.named ? [[situation.named.name, `${situation.named.name} returned`]] : []),
  ] as const) {
    const result = results.get(tool);
    if (result === undefined) continue;
    const failed = result.startsWith('Error:');
    const error = result.replace(/^Error:\s*/, '');
    findings.push(failed ? `The ${spoken(tool)} tool failed (${shorten(error)}).` : `${label}: ${shorten(result)}`);
    if (failed) problems.push(`The ${spoken(tool)} tool failed: ${shorten(error, 160).replace(/\.$/, '')}.`);
    else answers.push(`${label}:\n\n\`\`\`\n${result.slice(0, 2_000)}\n\`\`\``);
  }
  return { findings, answers, problems };
}
