import type { CompletionRequest } from '../../llm/llm-client.ts';
import type { Situation } from './demo-language.ts';

export const BUILT_IN_PLANS = new Set(['calculator', 'current_time', 'read_file', 'list_files', 'write_file', 'request_input']);

/** What the demo model reads of a request besides its arithmetic: a file to write or read, the session's files, a tool the user names. */

/** "Write 'hello' to out.txt", "save “notes” in a.md", "create a file out.txt with 'hello'": the file and its text. */
export function writeRequest(question: string): Situation['write'] {
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
export function requestedFile(request: CompletionRequest, question: string): string | undefined {
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
export const ATTACHED_FILE =
  /\b(?:(?:this|that|the|my|our|attached|uploaded)\s+(?:attached\s+|uploaded\s+|text\s+)?(?:file|document|doc|attachment|upload)|attachment|what I (?:attached|uploaded))\b/i;

/** Files the strategies keep in a chat (research's state and report, its tasks' outputs). */
export const AGENT_FILES = /^(?:RESEARCH_STATE\.md|final_report\.md|final_output\.md|task-[\w.]+\.json|figures\.md)$/;

/** The files the prompt was given (its `files_manifest` variable: one "- NAME (SIZE)" line a file, the newest marked). */
export function manifestFiles(request: CompletionRequest): Array<{ name: string; newest: boolean }> {
  const manifest = typeof request.variables?.files_manifest === 'string' ? request.variables.files_manifest : '';
  return [...manifest.matchAll(/^- (.+) \([\d.]+ [KM]?B(, newest)?\)$/gm)].map((match) => ({ name: match[1]!, newest: match[2] !== undefined }));
}

/** The file a read_file call of this conversation named. */
export function readFileName(request: CompletionRequest): string | undefined {
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
export function availableTools(request: CompletionRequest): Array<{ name: string; parameters: Record<string, unknown> }> {
  if (request.tools) return request.tools;
  const names = request.variables?.tool_names;
  return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string').map((name) => ({ name, parameters: {} })) : [];
}

/** An enabled tool that is not built in and that the question names ("echo", "everything__echo"). */
export function namedTool(question: string, tools: Array<{ name: string; parameters: Record<string, unknown> }>): Situation['named'] {
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
