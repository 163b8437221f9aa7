import type { CompletionRequest, LlmToolCall } from '../../llm/llm-client.ts';
import { spoken, unresolvedAnswer } from '../kernel/grounding.ts';
import { isSteerTurn } from '../kernel/steering.ts';
import {
  AGENT_FILES,
  ATTACHED_FILE,
  availableTools,
  BUILT_IN_PLANS,
  NO_ATTACHMENT,
  manifestFiles,
  namedTool,
  readFileName,
  requestedFile,
  writeRequest,
} from './demo-request.ts';
import { sizeOf, summarize } from './demo-summaries.ts';
import { arithmeticOf, type ChainLink, chainExpression, chainResult, findChain, findExpression, linkExpression } from './demo-arithmetic.ts';

export { BUILT_IN_PLANS, NO_ATTACHMENT, summarize };
export { arithmeticOf, chainExpression, chainResult, findChain, findExpression, linkExpression };

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

export type Next = 'calculator' | 'current_time' | 'read_file' | 'list_files' | 'write_file' | 'named' | 'request_input';

/** Reads what the demo model needs from one call: the request, the results so far, the tools. */
export function readSituation(request: CompletionRequest): Situation {
  // The request is the last user turn that is not a message read during the run (the demo computes; it takes no steering).
  const lastUser = findLastIndex(request.messages, (message) => message.role === 'user' && !isSteerTurn(message.content));
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

/** "page 4", "pages 3-5", "pages 3 to 5". */
const PAGE_REFERENCE = /\bpages?\s+\d+(?:\s*(?:-|–|to)\s*\d+)?/gi;

/** The pages a question asks of a PDF ("pages 3-5 of report.pdf", "page 4"), as read_file's `pages`. */
function pagesAsked(situation: Situation): { pages?: string } {
  if (!situation.file?.toLowerCase().endsWith('.pdf')) return {};
  const match = /\bpages?\s+(\d+)(?:\s*(?:-|–|to)\s*(\d+))?/i.exec(situation.question);
  return match ? { pages: match[2] ? `${match[1]}-${match[2]}` : match[1]! } : {};
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
