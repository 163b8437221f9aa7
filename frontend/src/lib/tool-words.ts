/** The built-in tools in words, for the screen: a tool card, a step's summary line. */
const TOOL_WORDS: Record<string, string> = {
  calculator: 'Calculator',
  current_time: 'Clock',
  read_file: 'Read a file',
  list_files: 'List the files',
  write_file: 'Write a file',
  todo_operations: 'To-do list',
  request_input: 'Question to you',
  notepad: 'Notepad',
};

/** A tool's name as a person reads it: the built-in ones in words, an MCP server's tool as "tool (server)". */
export function toolInWords(name: string): string {
  const known = TOOL_WORDS[name];
  if (known) return known;
  const split = name.indexOf('__');
  const words = (text: string) => text.replace(/[_-]+/g, ' ').trim();
  return split > 0 ? `${words(name.slice(split + 2))} (${words(name.slice(0, split))})` : words(name);
}
